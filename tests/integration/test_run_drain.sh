# Integration: `ksight run runqlat,offcpu,mem,tcp` waits for the kernel once per interval (mark all, one grace period, drain all), with mem's exact fault count kept.
. tests/lib.sh
need_root run_drain
command -v strace >/dev/null || { t_skip "run_drain" "needs strace"; exit 0; }

# LeakSanitizer cannot run under ptrace (make test-san): leaks are checked by every other test
[ -n "${ASAN_OPTIONS:-}" ] && export ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0"

before=$T_TMP/orphans.before
t_orphans >"$before"

# the grace-period waits (membarrier's global command) of a run, and its intervals
waits() {
	grep -c 'membarrier(MEMBARRIER_CMD_GLOBAL' "$1"
}

# four collectors, five intervals: five waits, not twenty (one per collector per interval before mark/drain)
strace -f -qq -e trace=membarrier -o "$T_TMP/four.st" \
	"$KSIGHT" run runqlat,offcpu,mem,tcp -i 0.2 -d 1.05 -j >"$T_TMP/four.json" 2>"$T_TMP/four.err"
t_eq "run four: exit 0" 0 "$?"
t_eq "run four: every interval has one report of each" "true" \
	"$(jq -s 'group_by(.interval) | all(map(.collector) | sort == ["mem","offcpu","runqlat","tcp"])' "$T_TMP/four.json")"
iv=$(jq -s 'map(.interval) | unique | length' "$T_TMP/four.json")
[ "$iv" -ge 3 ] && t_pass "run four: several intervals" || t_fail "run four: several intervals" "got $iv"
t_eq "run four: one kernel wait per interval" "$iv" "$(waits "$T_TMP/four.st")"

# each alone: the same one wait per interval
for c in runqlat offcpu mem tcp; do
	strace -f -qq -e trace=membarrier -o "$T_TMP/$c.st" "$KSIGHT" "$c" -i 0.2 -d 0.65 -j >"$T_TMP/$c.json" 2>/dev/null
	t_eq "$c alone: one kernel wait per interval" "$(jq -s length "$T_TMP/$c.json")" "$(waits "$T_TMP/$c.st")"
done

# exact counts through mark/drain: memload's faults over many intervals, beside the other three, sum to the kernel's count
if [ -n "$(awk '$3=="tracefs" {print $2; exit}' /proc/mounts)" ] &&
	[ ! -d "$(awk '$3=="tracefs" {print $2; exit}' /proc/mounts)/events/exceptions/page_fault_user" ]; then
	t_skip "run four: exact faults" "this kernel has no exceptions:page_fault_user tracepoint (x86 only)"
else
	"$WORKLOADS/memload" -g -n 2000 -l 3 >"$T_TMP/m.out" &
	mp=$!
	t_wait_for "$T_TMP/m.out" "[0-9]"
	k_start run runqlat,offcpu,mem,tcp -p "$mp" -i 0.1 -j
	f0=$(sed 's/.*) //' "/proc/$mp/stat" | awk '{ print $8 + $10 }')
	kill -USR1 "$mp"
	t_wait_for "$T_TMP/m.out" "^faults" || t_fail "run four: workload" "memload did not finish"
	sleep 0.3
	k_stop
	f1=$(sed 's/.*) //' "/proc/$mp/stat" | awk '{ print $8 + $10 }')
	kill -USR1 "$mp"
	wait "$mp" || t_fail "run four: workload" "memload failed"
	t_eq "run four: mem's faults over every interval equal the kernel's minflt+majflt" "$((f1 - f0))" \
		"$(jq -s --argjson p "$mp" '[.[] | select(.collector=="mem") | .rows[] | select(.pid == $p) | (.faults_user // 0) + (.faults_kernel // 0)] | add // 0' "$K_OUT")"
	t_eq "run four: mem lost nothing" "0" \
		"$(jq -s '[.[] | select(.collector=="mem") | .lost] | add // 0' "$K_OUT")"
fi

t_no_leaks "run_drain: no BPF objects left" "$before"
exit $T_FAILED
