# Integration: `ksight mem` counts the page faults of a known workload as the kernel does, and times reclaim under a memory cgroup limit.
. tests/lib.sh
need_root mem

N=2000

tfs=$(awk '$3=="tracefs" {print $2; exit}' /proc/mounts)
has_tp() {
	[ -z "$tfs" ] || [ -d "$tfs/events/$1" ]
}

# Starts memload gated on SIGUSR1 with ARGS; sets M_PID and M_OUT (its output).
M_SEQ=0
m_start() {
	M_SEQ=$((M_SEQ + 1))
	M_OUT=$T_TMP/m.$M_SEQ
	"$WORKLOADS/memload" -g "$@" >"$M_OUT" &
	M_PID=$!
	t_wait_for "$M_OUT" "[0-9]"
}

# minor + major faults the kernel counted for the whole workload so far
m_stat_faults() {
	sed 's/.*) //' "/proc/$M_PID/stat" | awk '{ print $8 + $10 }'
}

# Lets the workload run, and waits until it is done (it then waits for m_end).
m_go() {
	M_F0=$(m_stat_faults)
	kill -USR1 "$M_PID"
	t_wait_for "$M_OUT" "^faults" || t_fail "workload" "memload did not finish"
}

# After k_stop: the kernel's count of the workload's faults while traced, then its end.
m_end() {
	M_FAULTS=$(($(m_stat_faults) - M_F0))
	kill -USR1 "$M_PID"
	wait "$M_PID" || t_fail "workload" "memload failed"
}

# VALUE of the workload's row in the last report (0 when absent)
mval() {
	k_jq --argjson p "$M_PID" '(.rows[] | select(.pid == $p) | .'"$1"') // 0'
}

if ! has_tp exceptions/page_fault_user; then
	t_skip "mem faults" "this kernel has no exceptions:page_fault_user tracepoint (x86 only)"
else
	# -p: at least N user faults for N new pages, and exactly what the kernel counted, in every variant
	for hook in tp_btf raw_tp tp; do
		export KSIGHT_HOOK=$hook
		m_start -n $N -l 3
		k_start mem -p "$M_PID" -j
		m_go
		k_stop
		m_end
		unset KSIGHT_HOOK
		t_eq "$hook: hook used" "$hook" "$(k_jq .hook)"
		fu=$(mval faults_user)
		[ "$fu" -ge $((3 * N)) ] && t_pass "$hook: at least 3N user faults" || t_fail "$hook: at least 3N user faults" "got $fu"
		t_eq "$hook: faults equal the kernel's minflt+majflt" "$M_FAULTS" "$(($(mval faults_user) + $(mval faults_kernel)))"
		t_eq "$hook: comm of the row" "memload" "$(mval comm)"
		t_eq "$hook: nothing lost" "0" "$(k_jq .lost)"
	done

	# excluding: another process's filter sees none of it
	sleep 60 & other=$!
	m_start -n $N
	k_start mem -p "$other" -j
	m_go
	k_stop
	m_end
	kill $other
	t_eq "pid filter excludes other processes" "0" "$(mval faults_user)"

	# --by comm and --comm
	name=ksmem$$
	m_start -n $N -c "$name"
	k_start mem --by comm --comm "$name" -j
	m_go
	k_stop
	m_end
	t_eq "by comm: one row, the workload's" "$name" "$(k_jq '[.rows[].comm] | join(",")')"
	t_eq "by comm: its faults" "$M_FAULTS" "$(k_jq '.rows[0] | .faults_user + .faults_kernel')"

	# -i: one JSON line per interval, faults add up across the buffer flips
	m_start -n $N -l 10 -s 60
	k_start mem -p "$M_PID" -j -i 0.15
	m_go
	sleep 0.2
	k_stop
	m_end
	lines=$(wc -l <"$K_OUT")
	[ "$lines" -ge 3 ] && t_pass "interval: several JSON lines" || t_fail "interval: several JSON lines" "got $lines"
	t_eq "interval: faults add up across intervals" "$M_FAULTS" \
		"$(jq -s --argjson p "$M_PID" '[.[] | .rows[] | select(.pid == $p) | .faults_user + .faults_kernel] | add' "$K_OUT")"
fi

# Reclaim: a cgroup with a small memory limit reads a file bigger than the limit
# through the page cache; the kernel must reclaim the cgroup's own pages to go on.
cg=""
if [ -f /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
	cg=/sys/fs/cgroup/memory/ksight-mem-$$
	mkdir "$cg" && echo 16M >"$cg/memory.limit_in_bytes" || cg=""
	limit_hits() { cat "$cg/memory.failcnt"; }
else
	cg2=$(awk '$3=="cgroup2" {print $2; exit}' /proc/mounts)
	if [ -n "$cg2" ] && grep -qw memory "$cg2/cgroup.controllers" 2>/dev/null; then
		echo +memory >"$cg2/cgroup.subtree_control" 2>/dev/null
		cg=$cg2/ksight-mem-$$
		mkdir "$cg" && echo 16M >"$cg/memory.max" || cg=""
		limit_hits() { awk '$1 == "max" { print $2 }' "$cg/memory.events"; }
	fi
fi
# the file must live on a disk: tmpfs pages cannot be reclaimed without swap
dir=""
for d in "$T_TMP" /var/tmp "$PWD/build"; do
	case $(stat -f -c %T "$d" 2>/dev/null) in
	tmpfs | ramfs | "") ;;
	*) dir=$d; break ;;
	esac
done
# With none (the qemu guest's initramfs), a loop device over a file in memory: its own
# page cache is clean and reclaimable, and charged to the cgroup that reads it.
loop=""
if [ -z "$dir" ] && [ -n "$cg" ] && command -v losetup >/dev/null 2>&1; then
	img=$T_TMP/mem.img
	dd if=/dev/zero of="$img" bs=1M count=64 2>/dev/null
	loop=$(losetup -f --show "$img" 2>/dev/null) || loop=""
fi
if [ -z "$cg" ]; then
	t_skip "reclaim" "no memory cgroup controller (v1 memory or v2 memory) to set a limit"
elif [ -z "$dir" ] && [ -z "$loop" ]; then
	rmdir "$cg"
	t_skip "reclaim" "no disk-backed directory, and no loop device, for a file to read through the page cache"
elif ! has_tp vmscan/mm_vmscan_memcg_reclaim_begin; then
	rmdir "$cg"
	[ -n "$loop" ] && losetup -d "$loop"
	t_skip "reclaim" "this kernel has no vmscan:mm_vmscan_memcg_reclaim_begin tracepoint"
else
	if [ -n "$loop" ]; then
		file=$loop
		T_CLEANUP="losetup -d '$loop'; rmdir '$cg' 2>/dev/null"
	else
		file=$dir/ksight-mem-$$.dat
		T_CLEANUP="rm -f '$file'; rmdir '$cg' 2>/dev/null"
		dd if=/dev/zero of="$file" bs=1M count=64 conv=fsync 2>/dev/null
	fi
	m_start -f "$file"
	echo "$M_PID" >"$cg/cgroup.procs"
	hits0=$(limit_hits)
	k_start mem -p "$M_PID" -j
	m_go
	k_stop
	m_end
	hits=$(($(limit_hits) - hits0))
	[ "$hits" -gt 0 ] && t_pass "reclaim: the cgroup hit its limit" || t_fail "reclaim: the cgroup hit its limit" "$hits times"
	t_eq "reclaim: reclaim histogram not empty" "true" "$(k_jq --argjson p "$M_PID" '.rows[] | select(.pid == $p) |
		(.reclaim_ns.count > 0 and .reclaim_ns.p50 > 0 and .reclaim_ns.p50 <= .reclaim_ns.max)')"
	t_eq "reclaim: one timed stall per reclaim" "$(($(mval reclaims_direct) + $(mval reclaims_memcg)))" "$(mval reclaim_ns.count)"
	rp=$(mval reclaimed_pages)
	[ "$rp" -gt 0 ] && t_pass "reclaim: pages reclaimed" || t_fail "reclaim: pages reclaimed" "got $rp"
	t_eq "reclaim: nothing lost" "0" "$(k_jq .lost)"
	if [ -n "$loop" ]; then losetup -d "$loop"; else rm -f "$file"; fi
	T_CLEANUP=""
	rmdir "$cg" 2>/dev/null
fi

# bad input: exit 2 with one line, nothing loaded
"$KSIGHT" mem --by disk >/dev/null 2>"$T_TMP/bad.err"
t_eq "bad --by: exit 2" "2" "$?"
t_eq "bad --by: one line" "1" "$(wc -l <"$T_TMP/bad.err")"
"$KSIGHT" mem -Q >/dev/null 2>&1
t_eq "unknown option: exit 2" "2" "$?"
"$KSIGHT" mem -c /nonexistent-cgroup >/dev/null 2>&1
t_eq "bad cgroup: exit 2" "2" "$?"

# leftovers: no program of ours survives its process
t_no_leaks mem_
