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
		seen=$(($(mval faults_user) + $(mval faults_kernel)))
		t_eq "$hook: comm of the row" "memload" "$(mval comm)"
		if [ $hook = tp ]; then
			# A classic tracepoint's programs are skipped while any program of the kprobe/tracepoint/
			# perf_event kind runs on the CPU (bpf_prog_active), e.g. another tool's profiler whose
			# user-stack copy from an NMI faults on one of the workload's new pages: the kernel counts
			# those skips (recursion misses, which ksight reports as lost) but not the faults, which it
			# fails unhandled.  With `bpftrace -e 'profile:hz:4999 { @[ustack] = count(); }'` beside
			# it: lost 2186-3378, seen = the kernel's 6000.  So: every fault the kernel counted was seen
			# or is among the skips, and no loss of any other kind.
			rec=$(k_jq .lost_by.recursion)
			t_ok "$hook: faults seen <= the kernel's minflt+majflt ($M_FAULTS) <= seen $seen + skipped $rec" \
				[ "$seen" -le "$M_FAULTS" -a "$M_FAULTS" -le $((seen + rec)) ]
			t_eq "$hook: nothing lost but the kernel's recursion skips" "$rec" "$(k_jq .lost)"
		else
			t_eq "$hook: faults equal the kernel's minflt+majflt" "$M_FAULTS" "$seen"
			t_eq "$hook: nothing lost" "0" "$(k_jq .lost)"
		fi
		# always present: a hash map lock that gave up is a loss with its own name (issue 11)
		t_eq "$hook: map_update_failed reported" "0" "$(k_jq .lost_by.map_update_failed)"
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
	t_eq "reclaim: map_update_failed" "0" "$(k_jq .lost_by.map_update_failed)"
	if [ -n "$loop" ]; then losetup -d "$loop"; else rm -f "$file"; fi
	T_CLEANUP=""
	rmdir "$cg" 2>/dev/null
fi

# Memory cgroups for the tests below, made under ksight's own (v1 memory, or v2 with its memory
# controller): mcg_make NAME sets MCG, MCG_LIMIT (its limit file) and MCG_USAGE, or fails.
mcg_v1=""
[ -f /sys/fs/cgroup/memory/memory.limit_in_bytes ] &&
	mcg_v1=/sys/fs/cgroup/memory$(awk -F: '$2 == "memory" { print $3 }' /proc/self/cgroup)
mcg_v2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
mcg_make() {
	if [ -n "$mcg_v1" ]; then
		MCG=${mcg_v1%/}/$1-$$
		mkdir "$MCG" || return 1
		MCG_LIMIT=$MCG/memory.limit_in_bytes
		MCG_USAGE=$MCG/memory.usage_in_bytes
		# no swap to escape to (memsw is there only with swap accounting)
		[ -f "$MCG/memory.memsw.limit_in_bytes" ] || true
	elif [ -n "$mcg_v2" ] && grep -qw memory "$mcg_v2/cgroup.controllers" 2>/dev/null; then
		echo +memory >"$mcg_v2/cgroup.subtree_control" 2>/dev/null
		MCG=$mcg_v2/$1-$$
		mkdir "$MCG" || return 1
		MCG_LIMIT=$MCG/memory.max
		MCG_USAGE=$MCG/memory.current
		echo 0 >"$MCG/memory.swap.max" 2>/dev/null
	else
		return 1
	fi
}
vm_oom_kills() { awk '$1 == "oom_kill" { print $2 }' /proc/vmstat; }

# OOM kills: a process touching more than its memory cgroup allows is killed by the OOM killer,
# which runs in the context of whichever task allocates.  The kill is the victim's: its row by
# pid, by comm and by cgroup counts exactly one, and counters.oom_kills equals /proc/vmstat's.
if ! has_tp oom/mark_victim; then
	t_skip "oom" "this kernel has no oom:mark_victim tracepoint"
elif ! mcg_make ksight-oom; then
	t_skip "oom" "no memory cgroup controller to set a limit"
else
	# on a hybrid system the memory cgroup is v1: a v2 cgroup of its own names the victim's row
	v2cg=$MCG
	if [ -n "$mcg_v1" ] && [ -n "$mcg_v2" ]; then
		v2cg=$mcg_v2/ksight-oom2-$$
		mkdir "$v2cg"
	fi
	T_CLEANUP="rmdir '$MCG' '$v2cg' 2>/dev/null"
	echo 32M >"$MCG_LIMIT"
	cgid=$(stat -c %i "$v2cg")
	name=ksoom$$
	for by in pid comm cgroup; do
		m_start -n 40000 -c "$name"
		echo "$M_PID" >"$MCG/cgroup.procs"
		[ "$v2cg" != "$MCG" ] && echo "$M_PID" >"$v2cg/cgroup.procs"
		o0=$(vm_oom_kills)
		k_start mem --by $by -n 0 -j
		kill -USR1 "$M_PID"
		wait "$M_PID"
		rc=$?
		k_stop
		o1=$(vm_oom_kills)
		t_eq "oom $by: the workload was killed (SIGKILL)" "137" "$rc"
		t_eq "oom $by: counters.oom_kills equals /proc/vmstat's oom_kill delta" "$((o1 - o0))" "$(k_jq .counters.oom_kills)"
		case $by in
		pid) sel=".pid == $M_PID" ;;
		comm) sel=".comm == \"$name\"" ;;
		cgroup) sel=".cgroup_id == $cgid" ;;
		esac
		t_eq "oom $by: the victim's row counts its kill" "1" "$(k_jq "[.rows[] | select($sel) | .oom_kills] | add // 0")"
		[ $by = pid ] && t_eq "oom pid: the victim's row has its name" "$name" "$(k_jq ".rows[] | select($sel) | .comm")"
	done
	rmdir "$MCG" "$v2cg" 2>/dev/null
	T_CLEANUP=""
fi

# Names: children that fault under their parent's name, then rename themselves (prctl) or exec,
# fault N pages and exit before the report: their rows carry the new names.
if has_tp exceptions/page_fault_user; then
	link=$T_TMP/ksx$$
	ln -s "$PWD/$WORKLOADS/mem_fork" "$link"
	for by in pid comm; do
		k_start mem --by $by -n 0 -j
		"$WORKLOADS/mem_fork" -k 4 -n 200 -c ksren$$ >/dev/null
		"$WORKLOADS/mem_fork" -k 4 -n 200 -e "$link" >/dev/null
		k_stop
		if [ $by = pid ]; then
			t_eq "rename pid: 4 rows under the prctl name" "4" "$(k_jq "[.rows[] | select(.comm == \"ksren$$\" and .faults_user >= 200)] | length")"
			t_eq "rename pid: 4 rows under the exec'd name" "4" "$(k_jq "[.rows[] | select(.comm == \"ksx$$\" and .faults_user >= 200)] | length")"
		else
			# N each, and the odd page of their own (stack) after the rename
			n=$(k_jq "[.rows[] | select(.comm == \"ksren$$\") | .faults_user] | add")
			[ "$n" -ge 800 ] && [ "$n" -le 840 ] && t_pass "rename comm: the renamed children's faults under their new name" ||
				t_fail "rename comm: the renamed children's faults under their new name" "got $n, not 800 (+ a few)"
			n=$(k_jq "[.rows[] | select(.comm == \"ksx$$\") | .faults_user] | add")
			[ "$n" -ge 800 ] && t_pass "rename comm: the exec'd children's faults under their new name" ||
				t_fail "rename comm: the exec'd children's faults under their new name" "got $n"
		fi
	done
fi

# Rows are made without allocating: a burst of 3000 new rows (two threads on two CPUs taking a
# fresh name each round) while ksight's own memory cgroup is at its limit loses nothing (maps
# that allocated each row refused most of them as "map_full", with the map nowhere near full).
if has_tp exceptions/page_fault_user && mcg_make ksight-burst; then
	T_CLEANUP="rmdir '$MCG' 2>/dev/null"
	t_name burst
	sh -c "echo \$\$ >'$MCG/cgroup.procs'; exec '$KSIGHT' mem -v --by comm -n 0 -j" >"$T_NAME" 2>"$T_NAME.err" &
	kp=$!
	t_wait_for "$T_NAME.err" tracing
	echo $(($(cat "$MCG_USAGE") + 256 * 1024)) >"$MCG_LIMIT"
	"$WORKLOADS/mem_burst" -r 3000 -n 5 -p kb >/dev/null
	echo max >"$MCG_LIMIT" 2>/dev/null || echo -1 >"$MCG_LIMIT"
	kill -INT $kp
	wait $kp
	t_eq "burst: nothing lost" "0" "$(jq .lost "$T_NAME")"
	t_eq "burst: no event in other" "0" "$(jq -r .counters.to_other "$T_NAME")"
	# refusals whose row another CPU made meanwhile lose nothing; seen on 6.1 only (say which)
	t_pass "burst: rows the kernel refused: $(jq -r .counters.row_errors "$T_NAME") $(grep -o 'last: [^)]*' "$T_NAME.err")"
	t_eq "burst: a row per name" "3000" "$(jq '[.rows[] | select(.comm | test("^kb[0-9]+$"))] | length' "$T_NAME")"
	n=$(jq '[.rows[] | select(.comm | test("^kb[0-9]+$")) | .faults_user] | add' "$T_NAME")
	[ "$n" -ge 30000 ] && [ "$n" -le 30050 ] && t_pass "burst: every fault counted" || t_fail "burst: every fault counted" "$n, not 30000 (+ a few of the threads' own)"
	sleep 0.2
	rmdir "$MCG" 2>/dev/null
	T_CLEANUP=""
else
	t_skip "burst" "no fault tracepoint or no memory cgroup"
fi

# Memory budget: every mode's maps at 128 possible CPUs fit 64 MiB, and what is allocated at
# load fits 16 MiB; a budget too small is refused before load, naming the budget.
for by in pid comm cgroup; do
	KSIGHT_BUDGET_CPUS=128 "$KSIGHT" mem --by $by -j -d 0.5 >"$T_TMP/budget.json" 2>/dev/null
	t_eq "budget $by: 128 possible CPUs counted" "128" "$(jq .maps.possible_cpus "$T_TMP/budget.json")"
	t_eq "budget $by: maps <= 64 MiB, allocated <= 16 MiB" "true" \
		"$(jq '.maps.total <= 64 * 1048576 and .maps.allocated <= 16 * 1048576' "$T_TMP/budget.json")"
done
KSIGHT_BUDGET_CPUS=128 "$KSIGHT" mem --max-memory 1M -d 0.5 >/dev/null 2>"$T_TMP/budget.err"
rc=$?
[ $rc -ne 0 ] && t_pass "budget: 1M refused at 128 CPUs (exit $rc)" || t_fail "budget: 1M refused at 128 CPUs" "exit 0"
grep -q "budget" "$T_TMP/budget.err" && t_pass "budget: the message names the budget" ||
	t_fail "budget: the message names the budget" "$(cat "$T_TMP/budget.err")"

# Least privilege: with CAP_BPF and CAP_PERFMON only, as nobody, mem finds its tracepoints
# (in the kernel's BTF, not in tracefs) and counts.
if command -v setpriv >/dev/null 2>&1 && id nobody >/dev/null 2>&1 && [ -r /sys/kernel/btf/vmlinux ]; then
	cp "$KSIGHT" "$T_TMP/ksight-np" && chmod 755 "$T_TMP" "$T_TMP/ksight-np"
	# short processes fault while it runs (a quiet machine may have none, and ksight leaves itself out)
	(for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do ls / >/dev/null; sleep 0.05; done) &
	fp=$!
	setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all,+bpf,+perfmon \
		--ambient-caps=-all,+bpf,+perfmon -- "$T_TMP/ksight-np" mem -d 1 -n 0 -j >"$T_TMP/np.json" 2>"$T_TMP/np.err"
	rc=$?
	wait $fp
	if grep -qi "operation not permitted\|permission denied" "$T_TMP/np.err" && [ $rc -ne 0 ]; then
		t_skip "cap_bpf" "this kernel refuses tracing programs to CAP_BPF+CAP_PERFMON: $(head -1 "$T_TMP/np.err")"
	else
		t_eq "cap_bpf: exit 0" "0" "$rc"
		t_eq "cap_bpf: no tracepoint reported unavailable" "" "$(grep -i "not in this kernel" "$T_TMP/np.err")"
		n=$(jq '[.rows[] | .faults_user] | add // 0' "$T_TMP/np.json")
		[ "$n" -gt 0 ] && t_pass "cap_bpf: faults counted" || t_fail "cap_bpf: faults counted" "got $n"
	fi
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
t_no_leaks pid_comm_exec
