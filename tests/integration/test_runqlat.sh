# Integration: `ksight runqlat` against the kernel's own accounting (schedstat run_delay, context switch counts).
. tests/lib.sh
need_root runqlat
START_ID=$(t_prog_max_id)

N=20000
NCPU=$(getconf _NPROCESSORS_ONLN)
CPU=$((NCPU - 1))
# On a shared machine a tracepoint call is now and then lost while another
# tool attaches to or detaches from the same tracepoint; both ksight and
# the kernel's counters are right, they just see different events.  Exact
# comparisons therefore get a few attempts.
TRIES=4

# Sums a field over the workload's threads: pp_sum PID FILE AWKFIELD
pp_sum() {
	cat /proc/"$1"/task/*/"$2" 2>/dev/null | awk "$3"' END { printf "%.0f\n", s }'
}
run_delay() { pp_sum "$1" schedstat '{ s += $2 }'; }
nvcsw() { pp_sum "$1" status '/^voluntary_ctxt_switches/ { s += $2 }'; }
nivcsw() { pp_sum "$1" status '/^nonvoluntary_ctxt_switches/ { s += $2 }'; }

# One ping-pong run traced by runqlat with ARGS; the kernel's counters are
# read after tracing starts and before it stops, around the workload only.
# Sets RD, VOL, INVOL (kernel deltas) and leaves the report in K_OUT.
pp_run() {
	_ppargs=$1; shift
	g_start "$T_TMP/pp.$$" "$WORKLOADS/pingpong" -g -n $N $_ppargs || return 1
	set -- $G_LINE
	if [ $# -lt 3 ]; then
		kill $G_PID 2>/dev/null
		return 1
	fi
	PP_PID=$1 PP_A=$2 PP_B=$3
	shift 3
	if ! k_start runqlat -j $(echo "$RQ_ARGS" | sed "s/PID/$PP_PID/; s/TIDB/$PP_B/"); then
		kill $PP_PID 2>/dev/null
		return 1
	fi
	rd0=$(run_delay $PP_PID) v0=$(nvcsw $PP_PID) i0=$(nivcsw $PP_PID)
	kill -USR1 $PP_PID
	if ! t_wait_for "$G_FILE" done; then
		k_stop
		kill $PP_PID 2>/dev/null
		return 1
	fi
	rd1=$(run_delay $PP_PID) v1=$(nvcsw $PP_PID) i1=$(nivcsw $PP_PID)
	k_stop
	kill -USR1 $PP_PID
	wait $PP_PID
	RD=$((rd1 - rd0)) VOL=$((v1 - v0)) INVOL=$((i1 - i0))
}

# pp_run that names its failure: later checks then fail on an empty report
pp_check() {
	pp_run "$@" && return 0
	t_fail "ping-pong $1 / runqlat $RQ_ARGS" "the workload or ksight did not run"
	return 1
}

# sum of a row field over all rows
rsum() { k_jq "[.rows[].$1] | add // 0"; }

# --- same-CPU ping-pong: exact switch counts, run_delay cross-check
RQ_ARGS="-p PID"
i=0
while [ $i -lt $TRIES ]; do
	i=$((i + 1))
	pp_check "-c $CPU" || break
	# the start signal's wakeup may fall on either side of the window's edge
	[ "$(rsum voluntary)" = "$VOL" ] && [ "$(rsum involuntary)" = "$INVOL" ] &&
		[ "$(rsum wakeups)" = "$(rsum voluntary)" ] && break
done
count=$(rsum count) wake=$(rsum wakeups) vol=$(rsum voluntary) invol=$(rsum involuntary)
total=$(rsum total_wait_ns)
t_eq "same-cpu: hook" "tp_btf" "$(k_jq .hook)"
t_eq "same-cpu: filters.pid" "$PP_PID" "$(k_jq .filters.pid)"
t_eq "same-cpu: nothing lost" "0" "$(k_jq .lost)"
# always present: a hash map lock that gave up is a loss with its own name (issue 11)
t_eq "same-cpu: map_update_failed reported" "0" "$(k_jq .lost_by.map_update_failed)"
[ "$count" -ge $((2 * N)) ] && t_pass "same-cpu: at least 2N runnable events ($count)" ||
	t_fail "same-cpu: at least 2N runnable events" "count $count < $((2 * N))"
t_eq "same-cpu: voluntary switches = kernel nvcsw delta" "$VOL" "$vol"
t_eq "same-cpu: involuntary switches = kernel nivcsw delta" "$INVOL" "$invol"
t_eq "same-cpu: every wait began with a wakeup or a preemption" "$count" "$((wake + invol))"
t_eq "same-cpu: every block was followed by one wakeup" "$vol" "$wake"
[ "$(rsum cross_cpu)" -le 1 ] && t_pass "same-cpu: no cross-CPU wakeups but the start signal" ||
	t_fail "same-cpu: cross-CPU wakeups" "$(rsum cross_cpu) > 1"
# approximate and one-sided: ksight stamps each end with bpf_ktime_get_ns, run_delay is summed
# on rq->clock, which a wakeup that preempts leaves stale, so schedstat reads short, never long
# (~2% on the host; 11% in the 6.1 guest under TCG, where each instruction is slow). The window
# -5%..+30% still catches a wait missed (low) or counted twice (x2); the distribution itself is
# checked against a ktime reference in test_runqlat_dist.sh.
awk -v a="$total" -v b="$RD" 'BEGIN { exit !(b > 0 && a >= 0.95 * b && a <= 1.30 * b) }' &&
	t_pass "same-cpu: total_wait_ns $total within -5%..+30% of schedstat run_delay delta $RD" ||
	t_fail "same-cpu: total_wait_ns vs schedstat" "$total vs $RD (attempt $i)"
t_eq "same-cpu: histogram count = count" "$count" "$(k_jq '[.rows[].latency_ns.count] | add')"

# --- SCHED_BATCH (never preempted by a wakeup): wakeups are the round trips
RQ_ARGS="-p PID --by policy"
pp_check "-b -c $CPU"
t_eq "by policy: batch row, class cfs" "batch cfs" "$(k_jq -r '.rows[] | select(.policy=="batch") | "\(.policy) \(.class)"')"
w=$(k_jq '[.rows[] | select(.policy=="batch") | .wakeups] | add // 0')
[ "$w" -ge $N ] && t_pass "by policy: batch wakeups ($w >= N)" || t_fail "by policy: batch wakeups" "$w < $N"

# --- cross-CPU ping-pong: every wakeup crosses CPUs (direct and wake-list paths)
if [ "$NCPU" -ge 2 ]; then
	RQ_ARGS="-p PID"
	pp_check "-c 0 -x $CPU"
	wake=$(rsum wakeups) cross=$(rsum cross_cpu)
	awk -v c="$cross" -v w="$wake" -v n=$N 'BEGIN { exit !(w >= n && c >= 0.99 * w) }' &&
		t_pass "cross-cpu: $cross of $wake wakeups cross CPUs" ||
		t_fail "cross-cpu: wakeups crossing CPUs" "$cross of $wake"
else
	t_skip "cross-cpu" "one CPU"
fi

# --- -t: only the echo thread
RQ_ARGS="-t TIDB --by tid"
pp_check "-c $CPU"
t_eq "tid filter: only that thread" "$PP_B" "$(k_jq '[.rows[].tid] | unique | map(tostring) | join(",")')"
t_eq "tid filter: thread name" "pingpong" "$(k_jq -r '.rows[0].comm')"

# --- -C: the CPU the workload runs on, and another
RQ_ARGS="-p PID -C $CPU --by cpu"
pp_check "-c $CPU"
t_eq "cpu filter includes: one row, that CPU" "$CPU" "$(k_jq '[.rows[].cpu] | unique | map(tostring) | join(",")')"
if [ "$NCPU" -ge 2 ]; then
	RQ_ARGS="-p PID -C 0"
	pp_check "-c $CPU"
	t_eq "cpu filter excludes" "0" "$(rsum count)"
fi

# --- --comm
RQ_ARGS="--comm pingpong --by comm"
pp_check "-c $CPU"
t_eq "comm filter: one row" "pingpong" "$(k_jq -r '[.rows[].comm] | unique | join(",")')"
RQ_ARGS="--comm pingpongx"
pp_check "-c $CPU"
t_eq "comm filter excludes" "0" "$(rsum count)"

# --- --by cgroup and -c: a cgroup made for the test, shown by its path
cg2=$(awk '$3=="cgroup2" {print $2; exit}' /proc/mounts)
if [ -z "$cg2" ]; then
	t_skip "cgroup" "no cgroup v2 mount"
else
	cg=$cg2/ksight-rq-$$
	mkdir -p "$cg"
	T_CLEANUP="rmdir '$cg' 2>/dev/null"
	g_start "$T_TMP/ppc.$$" "$WORKLOADS/pingpong" -g -n $N -c $CPU
	set -- $G_LINE
	echo "$1" >"$cg/cgroup.procs"
	for t in $(ls /proc/$1/task); do echo "$t" >"$cg/cgroup.threads" 2>/dev/null; done
	k_start runqlat -j --by cgroup -c "$cg"
	kill -USR1 $1
	t_wait_for "$G_FILE" done
	k_stop
	kill -USR1 $1
	wait $1
	t_eq "by cgroup: path of the test cgroup" "/ksight-rq-$$" "$(k_jq -r '[.rows[].cgroup] | unique | join(",")')"
	c=$(rsum count)
	[ "$c" -ge $((2 * N)) ] && t_pass "cgroup filter includes ($c)" || t_fail "cgroup filter includes" "$c"
	rmdir "$cg"
fi

# --- nice 19 against nice 0 on one CPU: --by prio separates them (4 s from the start signal: a
# nice-19 hog may wait over a second for its turn; the hogs spin until killed, however long
# ksight takes to start, e.g. under TCG)
g_start "$T_TMP/hog.$$" "$WORKLOADS/cpuhog" -g -c $CPU -s 30 0 19
set -- $G_LINE
k_start runqlat -j -p "$1" --by prio
kill -USR1 "$1"
sleep 4
k_stop
kill "$1"
wait "$1" 2>/dev/null
p120=$(k_jq '[.rows[] | select(.prio==120) | .total_wait_ns] | add // 0')
p139=$(k_jq '[.rows[] | select(.prio==139) | .total_wait_ns] | add // 0')
m120=$(k_jq '[.rows[] | select(.prio==120) | .latency_ns.p50] | add // 0')
m139=$(k_jq '[.rows[] | select(.prio==139) | .latency_ns.p50] | add // 0')
t_eq "by prio: rows for nice 0 and nice 19" "120,139" "$(k_jq '[.rows[].prio] | map(select(. == 120 or . == 139)) | unique | map(tostring) | join(",")')"
[ "$p139" -gt "$p120" ] && [ "$m139" -gt "$m120" ] &&
	t_pass "by prio: nice 19 waits longer (total $p139 > $p120, p50 $m139 > $m120)" ||
	t_fail "by prio: nice 19 waits longer" "total $p139 vs $p120, p50 $m139 vs $m120"

# --- -i: the double buffer loses nothing across intervals
RQ_ARGS="-p PID -i 0.05"
i=0
while [ $i -lt $TRIES ]; do
	i=$((i + 1))
	pp_check "-c $CPU"
	vol=$(jq -s '[.[].rows[].voluntary] | add' "$K_OUT")
	[ "$vol" = "$VOL" ] && break
done
lines=$(wc -l <"$K_OUT")
[ "$lines" -ge 2 ] && t_pass "interval: several JSON lines ($lines)" || t_fail "interval: several JSON lines" "$lines"
t_eq "interval: voluntary switches add up to the kernel's" "$VOL" "$vol"

# --- the raw_tp fallback gives the same exact counts
RQ_ARGS="-p PID"
i=0
while [ $i -lt $TRIES ]; do
	i=$((i + 1))
	KSIGHT_HOOK=raw_tp pp_check "-c $CPU"
	[ "$(rsum voluntary)" = "$VOL" ] && break
done
t_eq "raw_tp: hook" "raw_tp" "$(k_jq .hook)"
t_eq "raw_tp: voluntary switches = kernel nvcsw delta" "$VOL" "$(rsum voluntary)"
t_eq "raw_tp: involuntary switches = kernel nivcsw delta" "$INVOL" "$(rsum involuntary)"

# --- threads already runnable when tracing starts: their waits began before, so none is timed
g_start "$T_TMP/hog2.$$" "$WORKLOADS/cpuhog" -c $CPU -s 30 0 0
set -- $G_LINE
sleep 1
k_start runqlat -j -p "$1" -d 1
wait "$K_PID"
kill "$1"
wait "$1" 2>/dev/null
max=$(k_jq '[.rows[].latency_ns.max] | max // 0')
[ "$max" -gt 0 ] && [ "$max" -lt 1500000000 ] && t_pass "runnable at start: no wait longer than the trace ($max ns)" ||
	t_fail "runnable at start: no bogus wait" "max $max"

# --- exited threads leave nothing behind: their rows go with the interval that drained them
RQ_ARGS="--comm pingpong --by tid -i 0.3"
g_start "$T_TMP/ppx.$$" "$WORKLOADS/pingpong" -g -n 2000 -c $CPU
set -- $G_LINE
k_start runqlat -j --comm pingpong --by tid -i 0.3
kill -USR1 $1
t_wait_for "$G_FILE" done
kill -USR1 $1
wait $1
sleep 1
k_stop
t_eq "exited threads: seen while alive" "true" "$(jq -s '[.[].rows[]] | length > 0' "$K_OUT")"
t_eq "exited threads: no rows after they are gone" "0" "$(tail -1 "$K_OUT" | jq '.rows | length')"
t_eq "exited threads: no map full" "0" "$(jq -s '[.[].lost_by.map_full] | add' "$K_OUT")"
t_eq "exited threads: no map_update_failed" "0" "$(jq -s '[.[].lost_by.map_update_failed] | add' "$K_OUT")"

# --- exec: one pid, one row, under the name it has after the exec (the process has exited by the
# report, so the name comes from the row, not /proc); the same by tid
for by in pid tid; do
	go=$T_TMP/go.$by
	rm -f "$go"
	# sh waits (polling sleeps) as "sh" until told to go, then becomes pingpong
	sh -c 'while [ ! -e "$1" ]; do sleep 0.05; done; sleep 0.05; exec "$2" -n 2000 -c "$3"' sh "$go" \
		"$WORKLOADS/pingpong" "$CPU" >/dev/null &
	X_PID=$!
	k_start runqlat -j -p "$X_PID" --by $by
	sleep 0.3
	touch "$go"
	wait $X_PID
	k_stop
	t_eq "exec, by $by: one row for the pid, under its new name" "pingpong" \
		"$(k_jq -r --argjson p "$X_PID" "[.rows[] | select(.$by == \$p) | .comm] | join(\",\")")"
	n=$(k_jq --argjson p "$X_PID" "[.rows[] | select(.$by == \$p) | .count] | add // 0")
	[ "$n" -ge 2000 ] && t_pass "exec, by $by: the waits before and after the exec in it ($n)" ||
		t_fail "exec, by $by: the waits before and after the exec in one row" "$n"
done

# --- bad input: exit 2 before anything is loaded
"$KSIGHT" runqlat --by nope -d 1 >/dev/null 2>&1
t_eq "bad --by exits 2" "2" "$?"
"$KSIGHT" runqlat --sort nope -d 1 >/dev/null 2>&1
t_eq "bad --sort exits 2" "2" "$?"
"$KSIGHT" runqlat -p 2147483647 -d 1 >/dev/null 2>&1
t_eq "missing pid exits 2" "2" "$?"
"$KSIGHT" runqlat extra >/dev/null 2>&1
t_eq "stray argument exits 2" "2" "$?"
"$KSIGHT" runqlat -h | grep -q -- "--sort KEY"
t_eq "help lists --sort" "0" "$?"

# --- -n with --sort p99: the top row has the largest p99
"$KSIGHT" runqlat -d 0.5 --by tid -n 3 --sort p99 -j >"$T_TMP/top.json" 2>/dev/null
t_eq "top by p99: at most 3 rows, sorted" "true" \
	"$(jq '(.rows | length <= 3) and ([.rows[].latency_ns.p99] | . == (sort | reverse))' "$T_TMP/top.json")"

# --- leftovers: every program this test loaded is gone with its ksight
sleep 0.5
t_eq "no leaked programs" "" "$(t_unheld_progs "$START_ID" '^sched_(switch__|wakeup__|wakeup_ne|waking__|migrate_)' | tr '\n' ' ')"
