# Integration: `ksight syscalls` counts a known workload exactly, and every filter includes and excludes.
. tests/lib.sh
need_root syscalls

N=20000
M=300
K=7000

# getppid count, close errors and EBADF count of the last report, as "n e b"
sc_summary() {
	k_jq '[(.rows[] | select(.syscall=="getppid") | .count) // 0,
	       (.rows[] | select(.syscall=="close") | .errors) // 0,
	       (.rows[] | select(.syscall=="close") | .errnos.EBADF) // 0] | map(tostring) | join(" ")'
}

# -p: exact counts, EBADF, and nothing from other processes
w_start -n $N -e $M
k_start syscalls -p "$W_PID" -j
w_go
k_stop
t_eq "pid filter: exact getppid, close errors, EBADF" "$N $M $M" "$(sc_summary)"
t_eq "pid filter: hook reported" "tp_btf" "$(k_jq .hook)"
t_eq "pid filter: filters.pid" "$W_PID" "$(k_jq .filters.pid)"
t_eq "pid filter: nothing lost" "0" "$(k_jq .lost)"
lat=$(k_jq '.rows[] | select(.syscall=="getppid") | .latency_ns | (.count == '$N' and .p50 > 0 and .p50 <= .p99 and .p99 <= .max and (.buckets | map(.[2]) | add) == '$N')')
t_eq "pid filter: getppid latency histogram consistent" "true" "$lat"

w_start -n $N
k_start syscalls -p "$W_PID" --by pid -j
w_go
k_stop
t_eq "pid filter: --by pid has only that process" "$W_PID" "$(k_jq '[.rows[].pid] | unique | map(tostring) | join(",")')"

# excluding: a pid filter on another process sees none of the workload
sleep 60 & other=$!
w_start -n $N
k_start syscalls -p "$other" -j
w_go
k_stop
kill $other
t_eq "pid filter excludes other process" "0 0 0" "$(sc_summary)"

# -t: the second thread alone, then the main thread alone
w_start -n $N -T $K
k_start syscalls -t "$W_TID2" -j
w_go
k_stop
t_eq "tid filter includes the thread" "$K" "$(k_jq '(.rows[] | select(.syscall=="getppid") | .count) // 0')"
w_start -n $N -T $K
k_start syscalls -t "$W_TID" -j
w_go
k_stop
t_eq "tid filter excludes other threads" "$N" "$(k_jq '(.rows[] | select(.syscall=="getppid") | .count) // 0')"

# --comm
name=ksw$$
w_start -n $N -e $M -c "$name"
k_start syscalls --comm "$name" -j
w_go
k_stop
t_eq "comm filter includes" "$N $M $M" "$(sc_summary)"
w_start -n $N -c "$name"
k_start syscalls --comm "${name}x" -j
w_go
k_stop
t_eq "comm filter excludes" "0 0 0" "$(sc_summary)"

# -c: a cgroup v2 directory made for the test
cg2=$(awk '$3=="cgroup2" {print $2; exit}' /proc/mounts)
if [ -z "$cg2" ]; then
	t_skip "cgroup filter" "no cgroup v2 mount"
else
	cg=$cg2/ksight-test-$$
	cge=$cg2/ksight-test-empty-$$
	mkdir -p "$cg" "$cge"
	T_CLEANUP="rmdir '$cg' '$cge' 2>/dev/null"
	w_start -n $N -e $M
	echo "$W_PID" >"$cg/cgroup.procs"
	k_start syscalls -c "$cg" -j
	w_go
	k_stop
	t_eq "cgroup filter includes" "$N $M $M" "$(sc_summary)"
	w_start -n $N
	echo "$W_PID" >"$cg/cgroup.procs"
	k_start syscalls -c "$cge" -j
	w_go
	k_stop
	t_eq "cgroup filter excludes" "0 0 0" "$(sc_summary)"
	rmdir "$cg" "$cge" 2>/dev/null
fi

# count-only mode (-L): the same exact counts from one hook, no histogram
w_start -n $N -e $M
k_start syscalls -L -p "$W_PID" -j
w_go
k_stop
t_eq "count-only: exact counts" "$N $M $M" "$(sc_summary)"
t_eq "count-only: no latency" "null" "$(k_jq '.rows[0].latency_ns')"

# --errors: only the failing calls are counted
w_start -n $N -e $M
k_start syscalls --errors -p "$W_PID" -j
w_go
k_stop
t_eq "errors only" "0 $M $M" "$(sc_summary)"

# --by errno
w_start -n $N -e $M
k_start syscalls --by errno -p "$W_PID" -j
w_go
k_stop
t_eq "by errno: EBADF row" "$M" "$(k_jq '(.rows[] | select(.errno=="EBADF") | .count) // 0')"

# --by comm
w_start -n $N -c "$name"
k_start syscalls --by comm -p "$W_PID" -j
w_go
k_stop
t_eq "by comm: row for the workload" "$name" "$(k_jq '.rows[0].comm')"

# -i: one JSON line per interval, counts add up
w_start -n $N
k_start syscalls -p "$W_PID" -j -i 0.3
w_go
sleep 0.7
k_stop
lines=$(wc -l <"$K_OUT")
sum=$(jq -s '[.[] | .rows[] | select(.syscall=="getppid") | .count] | add' "$K_OUT")
[ "$lines" -ge 2 ] && t_pass "interval: several JSON lines" || t_fail "interval: several JSON lines" "got $lines"
t_eq "interval: counts add up across intervals" "$N" "$sum"
