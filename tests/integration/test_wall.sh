# Integration: `ksight wall` on threads whose split of wall time is known by construction (tests/workloads/wallmix.c).
. tests/lib.sh
need_root wall
START_ID=$(t_prog_max_id)

# wm_run WALLMIX_ARGS -- WALL_ARGS: one traced run of wallmix; its lines in WM_OUT, the report in K_OUT.
# With WM_CG set, wallmix runs in that cgroup (v1 cpu) and TH_DELTA is its cpu.stat throttled_time
# over the threads' run.
wm_run() {
	_wa=
	while [ "$1" != "--" ]; do _wa="$_wa $1"; shift; done
	shift
	t_name wm
	WM_OUT=$T_NAME
	g_start "$WM_OUT" "$WORKLOADS/wallmix" $_wa || return 1
	WM_PID=${G_LINE#ready }
	[ -n "${WM_CG:-}" ] && echo "$WM_PID" >"$WM_CG/cgroup.procs"
	k_start wall -j -p "$WM_PID" "$@" || return 1
	[ -n "${WM_CG:-}" ] && _th0=$(awk '$1 == "throttled_time" { print $2 }' "$WM_CG/cpu.stat")
	kill -USR1 "$WM_PID"
	t_wait_for "$WM_OUT" '^done' || return 1
	[ -n "${WM_CG:-}" ] && TH_DELTA=$(($(awk '$1 == "throttled_time" { print $2 }' "$WM_CG/cpu.stat") - _th0))
	k_stop
	kill -USR1 "$WM_PID"
	wait "$WM_PID"
}

# One line per thread: NAME LIFE CPU RUNQ OWN (wallmix's own measures) then the report's
# TOTAL ONCPU RUNNABLE THROTTLED BLKIO D LOCK NETPIPE SLEEP OTHER_SLEEP OTHER SUM (ns).
joined() {
	# summed over the reports of every interval (-i)
	k_jq -s 'map(.rows[]) | group_by(.tid)[] | [.[0].tid] + ([ "total_ns", "oncpu_ns", "runnable_ns",
		"throttled_ns", "blkio_ns", "uninterruptible_ns", "lock_ns", "netpipe_ns", "sleep_ns",
		"other_sleep_ns", "other_ns" ] as $c | [ $c[] as $k | map(.[$k]) | add ]) | @tsv' |
		awk 'NR == FNR { r[$1] = $0; next }
			$1 == "thr" { n = split(r[$3], v, "\t"); if (!n) { print $2, "missing"; next }
				s = 0; for (i = 3; i <= n; i++) s += v[i]
				printf "%s %s %s %s %s", $2, $4, $5, $6, $7
				for (i = 2; i <= n; i++) printf " %s", v[i]
				printf " %d\n", s }' - "$WM_OUT"
}

# check NAME DESC AWK_CONDITION: the condition on thread NAME's line of `joined` (fields named
# life cpu rq own total oncpu runnable throttled blkio d lock net sleep osleep other sum;
# pct(x) is x's share of total in percent), printed with the numbers when it fails.
check() {
	_l=$(joined | awk -v n="$1" '$1 == n')
	echo "$_l" | awk "{ life = \$2; cpu = \$3; rq = \$4; own = \$5; total = \$6; oncpu = \$7; runnable = \$8
		throttled = \$9; blkio = \$10; d = \$11; lock = \$12; net = \$13; sleep = \$14; osleep = \$15
		other = \$16; sum = \$17 }
		function pct(x) { return total ? 100 * x / total : -1 }
		function abs(x) { return x < 0 ? -x : x }
		function tail(x) { return x > 0 ? x : 0 }
		END { exit !(NF >= 17 && ($3)) }" &&
		t_pass "$1: $2" || t_fail "$1: $2" "name life cpu rq own | total oncpu runnable throttled blkio d lock net sleep osleep other sum: $_l"
}

# tcheck: a check of times against the construction or the kernel's clocks, which an emulated
# guest (TCG) stretches unevenly: there a SKIP; the states' sum is checked everywhere
tcheck() {
	t_tcg_skip "$1: $2" || check "$@"
}

# --- the mix: each thread's states add up to its life, and each is the construction's
wm_run -- || t_fail "mix run" "wallmix or ksight did not finish"
t_eq "mix: hook" "tp_btf" "$(k_jq .hook)"
t_eq "mix: nothing lost" "0" "$(k_jq .lost)"
t_eq "mix: one report" "1" "$(k_jq -s length)"
for t in wm-spin30 wm-holder wm-waiter wm-feeder wm-reader wm-pin-a wm-pin-b wm-nap; do
	check $t "states add up to total_ns" "sum == total"
	# ksight's life runs from sched_wakeup_new to sched_process_exit, the thread's own from its
	# creation to its last look at schedstat: what follows (the exit path, and on a loaded CPU its
	# wait for it, 7.5 ms once) is in ksight's on-CPU and runnable time past that schedstat, its
	# tail.  0.5% of a ~1 s life is 5 ms
	tcheck $t "total within 0.5% of the thread's life (+ its exit after its last look)" \
		"total >= 0.995 * life && total <= life + tail(oncpu - cpu + runnable - rq) + 0.005 * life"
	# schedstat, read by the thread just before its end: its whole life, on rq clock
	tcheck $t "on-CPU against schedstat field 1 (1% of life)" "abs(oncpu - cpu) <= 0.01 * life"
	tcheck $t "runnable against schedstat field 2 (1% of life)" "abs(runnable - rq) <= 0.01 * life"
done
tcheck wm-spin30 "30% on-CPU (2 points)" "abs(pct(oncpu) - 30) <= 2"
tcheck wm-spin30 "70% in nanosleep (2 points)" "abs(pct(sleep) - 70) <= 2"
tcheck wm-spin30 "sleep against its own timing (2 points)" "abs(pct(sleep) - pct(own)) <= 2"
tcheck wm-waiter "50% waiting on the mutex (2 points)" "abs(pct(lock) - 50) <= 2"
tcheck wm-waiter "lock against its own timing of pthread_mutex_lock (2 points)" "abs(pct(lock) - pct(own)) <= 2"
tcheck wm-waiter "50% in nanosleep (2 points)" "abs(pct(sleep) - 50) <= 2"
tcheck wm-holder "asleep holding the mutex: 100% sleep (2 points)" "abs(pct(sleep) - 100) <= 2"
tcheck wm-reader "100% waiting on the pipe (2 points)" "abs(pct(net) - 100) <= 2"
tcheck wm-reader "pipe wait against its own timing of read (2 points)" "abs(pct(net) - pct(own)) <= 2"
tcheck wm-feeder "100% in nanosleep (2 points)" "abs(pct(sleep) - 100) <= 2"
tcheck wm-nap "100% in one nanosleep (2 points)" "abs(pct(sleep) - 100) <= 2"
tcheck wm-nap "sleep against its own timing (2 points)" "abs(pct(sleep) - pct(own)) <= 2"
for t in wm-pin-a wm-pin-b; do
	check $t "spinning: on-CPU or runnable, 100% (2 points)" "abs(pct(oncpu + runnable) - 100) <= 2"
	# half each on a quiet CPU; more than half when the host's other work shares it too
	tcheck $t "sharing its CPU: runnable at least half (2 points)" "pct(runnable) >= 48"
done
a=$(joined | awk '$1 == "wm-pin-a" { print 100 * $7 / $6 }')
b=$(joined | awk '$1 == "wm-pin-b" { print 100 * $7 / $6 }')
# the same share within 2 points, or where the host's other work leaves them little (11.5% and
# 9.1% once) within 15% of each other
awk -v a="$a" -v b="$b" 'BEGIN { d = a > b ? a - b : b - a; exit !(d <= 2 || d <= 0.15 * (a + b)) }' &&
	t_pass "pinned pair: the same on-CPU share" ||
	t_fail "pinned pair: the same on-CPU share" "$a% and $b%"

# --- roll-up by pid: the process's row holds its threads' time (and the main thread's)
wm_run -- --by pid || t_fail "by pid run" "wallmix or ksight did not finish"
ref=$(awk '$1 == "thr" { c += $5; l += $4 } END { print c, l }' "$WM_OUT")
got=$(k_jq --arg p "$WM_PID" '.rows[] | select(.pid == ($p | tonumber)) | "\(.oncpu_ns) \(.total_ns)"')
# on-CPU within 1% of their lives of schedstat's, as each thread's (the runqueue clock a wakeup
# that preempts leaves stale puts ~20 us a wakeup of a FIFO thread's wait on its CPU time)
echo "$got $ref" | awk '{ d = $1 - $3; exit !(NF == 4 && d <= 0.01 * $4 && d >= -0.01 * $4 && $2 >= 0.995 * $4) }' &&
	t_pass "by pid: one row, its threads' lives and on-CPU time (schedstat)" ||
	t_fail "by pid: one row, its threads' lives and on-CPU time (schedstat)" "oncpu total: $got, threads' cpu life: $ref"

# --- raw_tp, reporting every 100 ms: a state open at an interval's end is cut there and goes on
# in the next, so the intervals' sums are each thread's life again
KSIGHT_HOOK=raw_tp wm_run -- -i 0.1 || t_fail "raw_tp run" "wallmix or ksight did not finish"
t_eq "raw_tp: hook" "raw_tp" "$(k_jq -s '.[0].hook')"
n=$(k_jq -s 'length')
[ "$n" -ge 6 ] && t_pass "raw_tp: $n reports of 100 ms" || t_fail "raw_tp: reports of 100 ms" "$n"
for t in wm-spin30 wm-waiter wm-reader wm-pin-a wm-nap; do
	tcheck $t "raw_tp, -i: the intervals add up to its life (0.5%)" \
		"total >= 0.995 * life && total <= life + tail(oncpu - cpu + runnable - rq) + 0.005 * life && sum == total"
done
tcheck wm-waiter "raw_tp, -i: 50% waiting on the mutex (2 points)" "abs(pct(lock) - 50) <= 2"
# no event of its own in the ~8 windows its sleep spans: carried whole through each
tcheck wm-nap "raw_tp, -i: 100% in its one nanosleep (2 points)" "abs(pct(sleep) - 100) <= 2"

# --- throttled: a cgroup v1 cpu quota of 20%; the kernel's cpu.stat throttled_time is the reference
CPU_MNT=$(awk '$3 == "cgroup" && $4 ~ /(^|,)cpu(,|$)/ { print $2; exit }' /proc/mounts)
if [ -z "$CPU_MNT" ]; then
	t_skip "throttled" "no cgroup v1 cpu controller mounted"
else
	WM_CG=$CPU_MNT/ksight-wall-$$
	mkdir "$WM_CG" && T_CLEANUP="rmdir '$WM_CG'"
	echo 100000 >"$WM_CG/cpu.cfs_period_us"
	echo 20000 >"$WM_CG/cpu.cfs_quota_us"
	wm_run -T 1000 -- || t_fail "throttled run" "wallmix or ksight did not finish"
	tcheck wm-throttled "states add up to its life (0.5%)" \
		"total >= 0.995 * life && total <= life + tail(oncpu - cpu + runnable + throttled - rq) + 0.005 * life && sum == total"
	# 20% where its CPU is free; less where the host's other work takes part of it
	tcheck wm-throttled "quota 20%: on-CPU at most 20% (2 points)" "pct(oncpu) <= 22 && oncpu > 0"
	tcheck wm-throttled "throttled time against cpu.stat's throttled_time delta $TH_DELTA (2 points)" \
		"abs(pct(throttled) - pct($TH_DELTA)) <= 2 && throttled > 0"
	rmdir "$WM_CG" && T_CLEANUP=
	WM_CG=
fi

# --- CAP_BPF and CAP_PERFMON without root are enough
# the user must reach the binary: a directory of its own, outside root's 0700 T_TMP
if ! setpriv --help 2>&1 | grep -q -- --ambient-caps; then
	t_skip "no root" "setpriv has no --ambient-caps"
elif ! PRIV_DIR=$(mktemp -d /var/tmp/ksight-wall.XXXXXX 2>/dev/null); then
	t_skip "no root" "no /var/tmp to put a copy the user can reach"
else
	chmod 755 "$PRIV_DIR"
	cp "$KSIGHT" "$PRIV_DIR/ksight"
	T_CLEANUP="rm -rf '$PRIV_DIR'"
	# a thread that sleeps inside the window, so a quiet machine still gives a row
	for _i in 1 2 3 4 5 6 7 8; do sleep 0.1; done &
	_sl=$!
	setpriv --reuid 65534 --regid 65534 --clear-groups --inh-caps +bpf,+perfmon --ambient-caps +bpf,+perfmon \
		"$PRIV_DIR/ksight" wall -j -d 0.5 >"$T_TMP/priv.json" 2>"$T_TMP/priv.err"
	_rc=$?
	wait $_sl
	if [ $_rc = 126 ]; then
		t_skip "no root" "the user cannot execute $PRIV_DIR/ksight here: $(head -1 "$T_TMP/priv.err")"
	else
		t_eq "no root, CAP_BPF+CAP_PERFMON: exit 0 with rows" "0 true" "$_rc $(jq '.rows | length > 0' "$T_TMP/priv.json")"
	fi
	rm -rf "$PRIV_DIR" && T_CLEANUP=
fi

# --- bad input
"$KSIGHT" wall --by cpu -d 1 >/dev/null 2>&1
t_eq "wall --by cpu is not a key: exit 2" "2" "$?"
KSIGHT_HOOK=tp "$KSIGHT" wall -d 1 >/dev/null 2>&1
t_eq "no classic-tracepoint variant: exit 1" "1" "$?"

# --- leftovers: every program this test loaded is gone with its ksight
t_eq "no leaked programs" "" "$(t_unheld_progs "$START_ID" '^(sched_switch|sched_wakeup|sched_wakeup_new|sched_process_exit|sys_enter|sys_exit)__' | tr '\n' ' ')"

# --- block I/O, last (loop_setup ends the test with a SKIP where no loop device can be had): O_DIRECT
# reads of a loop device in memory, one in flight at a time.  The device's own read time
# (/sys/block/DEV/stat field 4, summed from each request's start to its end) is the reference:
# the thread sleeps in io_schedule for part of each request and is on its CPU or waiting for it
# for the rest (submitting it; preempted before it sleeps: 7.5% of the read time on one run, 25%
# on a more loaded host), so blkio_ns is at most that time, and the rest is on-CPU or runnable
. tests/integration/biolat_loop.sh
loop_setup wall
_rd0=$(awk '{ print $4 }' "$SYS/stat")
wm_run -D 500 "$LOOP" -- || t_fail "block I/O run" "wallmix or ksight did not finish"
_rd=$((($(awk '{ print $4 }' "$SYS/stat") - _rd0) * 1000000))
tcheck wm-dio "states add up to its life (0.5%)" \
	"total >= 0.995 * life && total <= life + tail(oncpu - cpu + runnable - rq) + 0.005 * life && sum == total"
check wm-dio "reading: on-CPU, runnable or in block I/O, 100% (2 points)" "abs(pct(oncpu + runnable + blkio) - 100) <= 2"
check wm-dio "block I/O at most the device's read time $_rd ns, the rest of it on-CPU or runnable" \
	"blkio > 0 && blkio <= $_rd + 1000000 && $_rd - blkio <= oncpu + runnable"
