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
# always present: a hash map lock that gave up is a loss with its own name (issue 11)
t_eq "pid filter: map_update_failed reported" "0" "$(k_jq .lost_by.map_update_failed)"
lat=$(k_jq '.rows[] | select(.syscall=="getppid") | .latency_ns | (.count == '$N' and .p50 > 0 and .p50 <= .p99 and .p99 <= .max and (.buckets | map(.[2]) | add) == '$N')')
t_eq "pid filter: getppid latency histogram consistent" "true" "$lat"

w_start -n $N
k_start syscalls -p "$W_PID" --by pid -j
w_go
k_stop
t_eq "pid filter: --by pid has only that process" "$W_PID" "$(k_jq '[.rows[].pid] | unique | map(tostring) | join(",")')"
t_eq "pid filter: --by pid, map_update_failed" "0" "$(k_jq .lost_by.map_update_failed)"

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
# intervals pass before the calls: -p ends the run when the workload exits
sleep 0.7
w_go
k_stop
lines=$(wc -l <"$K_OUT")
sum=$(jq -s '[.[] | .rows[] | select(.syscall=="getppid") | .count] | add' "$K_OUT")
[ "$lines" -ge 2 ] && t_pass "interval: several JSON lines" || t_fail "interval: several JSON lines" "got $lines"
t_eq "interval: counts add up across intervals" "$N" "$sum"

# Calls, not returns (both modes): N forks are N clone calls (the child's
# return is not a call), each child's _exit is one exit_group (counted at
# entry, or at the thread's exit in -L: it never returns), and each handled
# signal ends in one rt_sigreturn (nr -1 at sys_exit).
F=200
S=300
WL=$WORKLOADS/sc_calls
for mode in "" -L; do
	t_name scw
	g_start "$T_NAME" "$WL" -f $F -s $S
	k_start syscalls $mode -p "$G_PID" -j -n 0
	kill -USR1 "$G_PID"
	wait "$G_PID"
	k_stop
	t_eq "calls${mode:+ $mode} -p: clone = forks, rt_sigreturn = kill = signals, one exit_group" "$F $S $S 1" \
		"$(k_jq '[(.rows[] | select(.syscall=="clone") | .count) // 0, (.rows[] | select(.syscall=="rt_sigreturn") | .count) // 0, (.rows[] | select(.syscall=="kill") | .count) // 0, (.rows[] | select(.syscall=="exit_group") | .count) // 0] | map(tostring) | join(" ")')"
	# the children: one exit_group each, by comm (they keep the parent's name, and nothing else is named so)
	t_name scw
	g_start "$T_NAME" "$WL" -f $F
	k_start syscalls $mode --comm sc_calls -j -n 0
	kill -USR1 "$G_PID"
	wait "$G_PID"
	k_stop
	t_eq "calls${mode:+ $mode}: exit_group once per process" "$((F + 1)) $F" \
		"$(k_jq '[(.rows[] | select(.syscall=="exit_group") | .count) // 0, (.rows[] | select(.syscall=="clone") | .count) // 0] | map(tostring) | join(" ")')"
done

# sc_exec_run ARGS: runs sysload ARGS through a shell that execs it (so the
# pid's first calls are the shell's); sets G_PID.
sc_exec_run() {
	t_name scx
	: >"$T_NAME"
	sh -c "exec '$WORKLOADS/sysload' $*" >"$T_NAME" &
	G_PID=$!
	t_wait_for "$T_NAME" " "
	kill -USR1 "$G_PID"
	wait "$G_PID"
}
# A process started by a shell that execs: its pid row is named after the
# program it became (the name now, or at its exit), in both modes; by comm,
# each call goes under the name the task had when the call returned, so the
# exec'd program's calls are under its own name and none under the shell's.
for mode in "" -L; do
	k_start syscalls $mode --by pid -j -n 0
	sc_exec_run -n $N
	k_stop
	t_eq "exec${mode:+ $mode}: --by pid row named after the exec'd program" "sysload" \
		"$(k_jq --argjson p "$G_PID" '(.rows[] | select(.pid == $p) | .comm) // "none"')"
	cnt=$(k_jq --argjson p "$G_PID" '(.rows[] | select(.pid == $p) | .count) // 0')
	[ "$cnt" -ge "$N" ] && t_pass "exec${mode:+ $mode}: --by pid row has the calls" || t_fail "exec${mode:+ $mode}: --by pid row has the calls" "count $cnt < $N"
done
# The same by pid and syscall, in each hook variant (each has its own exec
# program): every row of the pid, the shells' calls before the exec too, is
# named after the program it became once it exited; the program's failing
# closes are all there, exactly (the shells' closes succeed).
for hook in tp_btf raw_tp tp; do
	export KSIGHT_HOOK=$hook
	k_start syscalls --by pid,syscall -j -n 0
	sc_exec_run -n $N -e $M
	k_stop
	unset KSIGHT_HOOK
	t_eq "exec $hook: hook used" "$hook" "$(k_jq .hook)"
	t_eq "exec $hook: --by pid,syscall rows of the pid all named after the exec'd program" "sysload" \
		"$(k_jq --argjson p "$G_PID" '[.rows[] | select(.pid == $p) | .comm] | unique | join(",")')"
	t_eq "exec $hook: --by pid,syscall close errors and EBADF exact, getppid at least N" "$M $M true" \
		"$(k_jq --argjson p "$G_PID" '[(.rows[] | select(.pid == $p and .syscall == "close") | .errors, .errnos.EBADF) // 0, ([.rows[] | select(.pid == $p and .syscall == "getppid") | .count] | add // 0) >= '$N'] | map(tostring) | join(" ")')"
done
k_start syscalls --by comm -j -n 0
sc_exec_run -n $N -c scexecd
k_stop
cnt=$(k_jq '(.rows[] | select(.comm == "scexecd") | .count) // 0')
[ "$cnt" -ge "$N" ] && t_pass "exec: --by comm row of the exec'd program has its calls" || t_fail "exec: --by comm row of the exec'd program has its calls" "count $cnt < $N"

# New rows in bursts: two threads on two CPUs take the same fresh name R
# times, 12 calls under each; every row is made, none is lost, the map is far from full.
R=3000
for mode in "" -L; do
	t_name scb
	g_start "$T_NAME" "$WL" -b $R
	k_start syscalls $mode --by comm -p "$G_PID" -j -n 0
	kill -USR1 "$G_PID"
	wait "$G_PID"
	k_stop
	t_eq "burst${mode:+ $mode}: map_full" "0" "$(k_jq '.lost_by.map_full')"
	t_eq "burst${mode:+ $mode}: map_update_failed" "0" "$(k_jq '.lost_by.map_update_failed')"
	t_eq "burst${mode:+ $mode}: $R fresh rows of exactly 12 calls" "$R 0" \
		"$(k_jq '[([.rows[] | select(.comm | test("^scb[0-9]+$"))] | length), ([.rows[] | select(.comm | test("^scb[0-9]+$")) | select(.count != 12)] | length)] | map(tostring) | join(" ")')"
done

# Combined keys (issue 10): which process makes which calls.  System-wide (no filter): the
# workload's getppid and failing close calls are rows of their own, exact in both modes.
# kv KEY VALUE SYSCALL: "count errors EBADF" of the row of KEY == VALUE and SYSCALL
kv() {
	k_jq --arg s "$3" --argjson v "$2" '[(.rows[] | select(.'"$1"' == $v and .syscall == $s)) // {count: 0, errors: 0, errnos: {}}] | .[0] |
		[.count, .errors, (.errnos.EBADF // 0)] | map(tostring) | join(" ")'
}
for mode in "" -L; do
	w_start -n $N -e $M -c "$name"
	k_start syscalls $mode --by pid,syscall -j -n 0
	w_go
	k_stop
	t_eq "pid,syscall${mode:+ $mode}: (pid, getppid) = N" "$N 0 0" "$(kv pid "$W_PID" getppid)"
	t_eq "pid,syscall${mode:+ $mode}: (pid, close) = M errors, all EBADF" "$M $M $M" "$(kv pid "$W_PID" close)"
	t_eq "pid,syscall${mode:+ $mode}: the rows are named by the process" "$name $name" \
		"$(k_jq --argjson p "$W_PID" '[.rows[] | select(.pid == $p and (.syscall == "getppid" or .syscall == "close")) | .comm] | unique | (.[0] + " " + .[-1])')"
	t_eq "pid,syscall${mode:+ $mode}: nothing lost, nothing in other" "0 0" "$(k_jq '[.lost, .counters.to_other] | map(tostring) | join(" ")')"
	if [ -z "$mode" ]; then
		t_eq "pid,syscall: a latency histogram per row" "$N $M" \
			"$(k_jq --argjson p "$W_PID" '[(.rows[] | select(.pid == $p and .syscall == "getppid") | .latency_ns.count), (.rows[] | select(.pid == $p and .syscall == "close") | .latency_ns.count)] | map(tostring) | join(" ")')"
	else
		t_eq "pid,syscall -L: no latency" "null" "$(k_jq '.rows[0].latency_ns')"
	fi
	w_start -n $N -e $M -c "$name"
	k_start syscalls $mode --by comm,syscall -j -n 0
	w_go
	k_stop
	t_eq "comm,syscall${mode:+ $mode}: (comm, getppid) = N" "$N 0 0" "$(kv comm "\"$name\"" getppid)"
	t_eq "comm,syscall${mode:+ $mode}: (comm, close) = M" "$M $M $M" "$(kv comm "\"$name\"" close)"
done
# --sort and the text layout: a column per key
w_start -n $N -e $M
k_start syscalls --by pid,syscall -p "$W_PID" --sort count -j -n 0
w_go
k_stop
t_eq "pid,syscall --sort count: decreasing counts, getppid first" "true getppid" \
	"$(k_jq '[([.rows[].count] | . == (sort | reverse)), .rows[0].syscall] | map(tostring) | join(" ")')"
w_start -n $N -e $M
k_start syscalls --by pid,syscall -p "$W_PID" --sort errors
w_go
k_stop
t_eq "pid,syscall text: a column per key" "pid comm syscall nr count" "$(awk 'NR == 1 { print $1, $2, $3, $4, $5 }' "$K_OUT")"
t_eq "pid,syscall text --sort errors: close first" "$W_PID sysload close 3 $M" "$(awk 'NR == 2 { print $1, $2, $3, $4, $5 }' "$K_OUT")"
if [ -n "$cg2" ]; then
	cg=$cg2/ksight-test-$$
	mkdir -p "$cg"
	T_CLEANUP="rmdir '$cg' 2>/dev/null"
	w_start -n $N -e $M
	echo "$W_PID" >"$cg/cgroup.procs"
	k_start syscalls --by cgroup,syscall -j -n 0
	w_go
	k_stop
	t_eq "cgroup,syscall: (cgroup, getppid) = N" "$N 0 0" "$(kv cgroup "\"/ksight-test-$$\"" getppid)"
	t_eq "cgroup,syscall: (cgroup, close) = M" "$M $M $M" "$(kv cgroup "\"/ksight-test-$$\"" close)"
	t_eq "cgroup,syscall: the cgroup's id" "$(stat -c %i "$cg")" "$(k_jq --arg c "/ksight-test-$$" '[.rows[] | select(.cgroup == $c)][0].cgroup_id')"
	rmdir "$cg" 2>/dev/null
fi
# Keys beyond the budget's rows go to "other", counted: R fresh names x 2 syscalls, in 4 MiB
# (a few hundred rows); every row made is exact, the rest is in "other", nothing is lost.
t_name scb
g_start "$T_NAME" "$WL" -b $R
k_start syscalls --by comm,syscall --max-memory 4M -p "$G_PID" -j -n 0
kill -USR1 "$G_PID"
wait "$G_PID"
k_stop
t_eq "comm,syscall over budget: nothing lost" "0" "$(k_jq '.lost')"
t_eq "comm,syscall over budget: keys went to other" "true" "$(k_jq '.counters.to_other > 0')"
t_eq "comm,syscall over budget: the other row has them" "$(k_jq '.counters.to_other')" \
	"$(k_jq '[.rows[] | select(.comm == "other") | .count] | add')"
t_eq "comm,syscall over budget: rows made are exact (prctl 2, getppid 10)" "0" \
	"$(k_jq '[.rows[] | select(.comm | test("^scb[0-9]+$")) | select((.syscall == "prctl" and .count != 2) or (.syscall == "getppid" and .count != 10))] | length')"

# The memory budget, as a 128-CPU node would size it: every mode within
# 64 MiB worst case, the default mode within 16 MiB allocated at load.
for by in syscall pid comm errno pid,syscall comm,syscall cgroup,syscall; do
	for mode in "" -L --errors; do
		KSIGHT_BUDGET_CPUS=128 "$KSIGHT" syscalls --by $by $mode -j -d 0.3 >"$T_TMP/b.json" 2>"$T_TMP/b.err"
		t_eq "budget: --by $by $mode: maps <= 64 MiB at 128 CPUs" "true" \
			"$(jq '.maps.possible_cpus == 128 and .maps.total <= 67108864' "$T_TMP/b.json" 2>&1)"
	done
done
KSIGHT_BUDGET_CPUS=128 "$KSIGHT" syscalls -j -d 0.3 >"$T_TMP/b.json" 2>/dev/null
t_eq "budget: default mode allocates <= 16 MiB at load at 128 CPUs" "true" "$(jq '.maps.allocated <= 16777216' "$T_TMP/b.json")"
before=$(t_prog_max_id)
KSIGHT_BUDGET_CPUS=128 "$KSIGHT" syscalls --max-memory 1M -d 0.3 >"$T_TMP/b.out" 2>"$T_TMP/b.err"
rc=$?
[ $rc -ne 0 ] && grep -q "memory budget of 1.0 MiB" "$T_TMP/b.err" && t_pass "budget: --max-memory 1M refused, naming the budget" ||
	t_fail "budget: --max-memory 1M refused, naming the budget" "rc $rc: $(head -2 "$T_TMP/b.err")"
t_eq "budget: refused before load, nothing left" "" "$(t_unheld_progs "$before" '^(sys_e|task_ex)' | tr '\n' ' ')"
t_no_leaks sys_e
t_no_leaks pid_comm_exec
