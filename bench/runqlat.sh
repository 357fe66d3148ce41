#!/bin/bash
# Overhead of run-queue latency tracing on a same-CPU pipe ping-pong: extra ns per round trip (2 wakeups + 2 switches)
# for the floor (empty programs), ksight runqlat, libbpf-tools runqlat, a bpftrace one-liner and perf sched record.
# Usage: bench/runqlat.sh [REPS] [ROUNDS] [SAMPLES]: REPS rounds over all configurations, interleaved, each
# attaching the tracer once and timing SAMPLES ping-pongs of ROUNDS round trips; medians (and lower quartiles).
# STATS=1 adds a pass with kernel.bpf_stats_enabled that prices each BPF tool's programs alone, in ns per
# round trip (precise where the end-to-end figures are noisy; it slows every BPF program on the machine
# while it runs, so it is off by default).
cd "$(dirname "$0")/.." || exit 1
REPS=${1:-8}
ROUNDS=${2:-15000}
SAMPLES=${3:-4}
B=build/bench
# KSIGHT_BIN: another build to price (e.g. the main branch's, for a before/after)
KS=${KSIGHT_BIN:-./ksight}
CPU=$(($(getconf _NPROCESSORS_ONLN) - 1))
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

[ "$(id -u)" = 0 ] || { echo "bench: needs root" >&2; exit 1; }
make -s all || exit 1
mkdir -p $B
# the floor is built by `make bench-tools` (bench/*.bpf.c + bench/*.c), not part of ksight
make -s bench-tools || exit 1

# runqlat as a bpftrace one-liner: wakeup/preemption -> switch in, a histogram
BT='tracepoint:sched:sched_wakeup,tracepoint:sched:sched_wakeup_new { @q[args->pid] = nsecs; }
tracepoint:sched:sched_switch {
	if (args->prev_state == 0) { @q[args->prev_pid] = nsecs; }
	$t = @q[args->next_pid];
	if ($t) { @usecs = hist((nsecs - $t) / 1000); delete(@q[args->next_pid]); }
}'

CONFIGS="base floor ksight libbpf-tools bpftrace perf-sched"
have() { command -v "$1" >/dev/null 2>&1; }

# start_tracer NAME: starts it in the background (T_PID) and waits until it traces
start_tracer() {
	local log=$TMP/$1.log
	: >"$log"
	case $1 in
	base) T_PID=; return 0 ;;
	floor) $B/sched_floor 2>"$log" & T_PID=$!; ready="attached" ;;
	ksight) $KS runqlat >/dev/null 2>"$log" & T_PID=$!; ready="tracing" ;;
	libbpf-tools) stdbuf -oL runqlat >"$log" 2>&1 & T_PID=$!; ready="Tracing" ;;
	bpftrace) bpftrace -e "$BT" >"$log" 2>&1 & T_PID=$!; ready="Attaching" ;;
	perf-sched) perf sched record -o "$TMP/perf.data" -q >"$log" 2>&1 & T_PID=$!; sleep 2; return 0 ;;
	esac
	for _ in $(seq 1 300); do
		grep -q "$ready" "$log" 2>/dev/null && { sleep 0.2; return 0; }
		kill -0 $T_PID 2>/dev/null || break
		sleep 0.05
	done
	echo "bench: $1 did not start: $(head -3 "$log")" >&2
	return 1
}

stop_tracer() {
	[ -n "$T_PID" ] || return 0
	kill -INT $T_PID 2>/dev/null
	# a SIGINT that lands before the tracer installs its handler is lost
	# (background jobs start with SIGINT ignored): then TERM, then KILL
	for sig in TERM KILL; do
		for _ in $(seq 1 50); do
			kill -0 $T_PID 2>/dev/null || break 2
			sleep 0.1
		done
		kill -$sig $T_PID 2>/dev/null
	done
	wait $T_PID 2>/dev/null
	rm -f "$TMP/perf.data"*
}

median() { sort -n | awk '{a[NR] = $1} END { if (NR) print a[int((NR + 1) / 2)]; else print "" }'; }

avail() {
	case $1 in
	libbpf-tools) have runqlat ;;
	bpftrace) have bpftrace ;;
	perf-sched) have perf ;;
	*) true ;;
	esac
}

# STATS_ONLY=1: only the in-kernel price, in REPS alternating rounds of floor, ksight and libbpf-tools
# (KSIGHT_ARGS adds options to ksight), each pricing its own programs over one ping-pong of ROUNDS round
# trips; medians, and ksight's extra over the floor as a fraction of libbpf-tools' (issue 11: <= 0.6).
if [ "${STATS_ONLY:-0}" = 1 ]; then
	prog_ids() { bpftool -j prog show | jq -r '.[].id' | sort -n; }
	# ns per round trip (2 wakeups + 2 switches) of the programs loaded since $TMP/before
	price() {
		bpftool -j prog show | jq -r --arg ids "$(comm -13 "$TMP/before" "$TMP/after" | tr '\n' ' ')" '
			($ids | split(" ") | map(select(. != "") | tonumber)) as $want
			| [.[] | select((.id as $i | $want | index($i)) and (.name // "" | test("^(floor_|sched_)")))
			  | {name, mean: ((.run_time_ns // 0) / ((.run_cnt // 0) + 0.0001))}]
			| (map(select(.name | test("wakeup$|wakeup__|^floor_wakeup$"))) | map(.mean) | add // 0) as $w
			| (map(select(.name | test("switch"))) | map(.mean) | add // 0) as $s
			| 2 * $w + 2 * $s | floor'
	}
	sysctl -q -w kernel.bpf_stats_enabled=1
	for rep in $(seq 1 "$REPS"); do
		for c in floor ksight libbpf-tools; do
			avail $c || continue
			prog_ids >"$TMP/before"
			if [ $c = ksight ] && [ -n "${KSIGHT_ARGS:-}" ]; then
				$KS runqlat $KSIGHT_ARGS >/dev/null 2>"$TMP/ksight.log" & T_PID=$!
				for _ in $(seq 1 300); do grep -q tracing "$TMP/ksight.log" && break; sleep 0.05; done
				sleep 0.2
			else
				start_tracer $c || continue
			fi
			prog_ids >"$TMP/after"
			build/workloads/pingpong -n "$ROUNDS" -c $CPU >/dev/null
			price >>"$TMP/st.$c"
			stop_tracer
		done
	done
	sysctl -q -w kernel.bpf_stats_enabled=0
	f=$(median <"$TMP/st.floor") k=$(median <"$TMP/st.ksight") l=$(median <"$TMP/st.libbpf-tools")
	echo "in-kernel ns per round trip (2 wakeups + 2 switches), medians of $REPS alternating rounds of $ROUNDS:"
	for c in floor ksight libbpf-tools; do printf "  %-13s %6s   (%s)\n" $c "$(median <"$TMP/st.$c")" "$(sort -n "$TMP/st.$c" | tr '\n' ' ')"; done
	awk -v k="$k" -v l="$l" -v f="$f" 'BEGIN { if (l > f) printf "ksight over floor / libbpf-tools over floor: %d / %d = %.2f (target <= 0.6)\n", k - f, l - f, (k - f) / (l - f) }'
	exit 0
fi
for c in $CONFIGS; do : >"$TMP/res.$c"; done
for rep in $(seq 1 "$REPS"); do
	for c in $CONFIGS; do
		avail $c || continue
		start_tracer $c || continue
		# wall and CPU ns per round trip; CPU time is what other tasks on the CPU cannot inflate
		for _ in $(seq 1 "$SAMPLES"); do
			build/workloads/pingpong -n "$ROUNDS" -c $CPU >>"$TMP/res.$c"
		done
		stop_tracer
	done
done

q1() { sort -n | awk '{a[NR] = $1} END { if (NR) print a[int((NR + 3) / 4)]; else print "" }'; }
base_cpu=$(awk '{print $2}' "$TMP/res.base" | median)
base_wall=$(awk '{print $1}' "$TMP/res.base" | median)
printf "same-CPU pipe ping-pong, %d round trips x %d samples on CPU %d, medians\n" "$ROUNDS" "$((REPS * SAMPLES))" "$CPU"
base_q1=$(awk '{print $2}' "$TMP/res.base" | q1)
printf "%-14s %12s %12s %14s %12s %14s\n" config cpu_ns/rt wall_ns/rt extra_cpu_ns cpu_q1 extra_q1
for c in $CONFIGS; do
	[ -s "$TMP/res.$c" ] || { printf "%-14s %12s\n" "$c" "n/a"; continue; }
	cpu=$(awk '{print $2}' "$TMP/res.$c" | median)
	wall=$(awk '{print $1}' "$TMP/res.$c" | median)
	cq=$(awk '{print $2}' "$TMP/res.$c" | q1)
	extra=$(awk -v a="$cpu" -v b="$base_cpu" 'BEGIN { printf "%.0f", a - b }')
	extra_q=$(awk -v a="$cq" -v b="$base_q1" 'BEGIN { printf "%.0f", a - b }')
	eval "extra_$(echo $c | tr -- - _)=$extra"
	printf "%-14s %12s %12s %14s %12s %14s\n" "$c" "$cpu" "$wall" "$extra" "$cq" "$extra_q"
done
awk -v k="$extra_ksight" -v l="$extra_libbpf_tools" -v f="$extra_floor" 'BEGIN {
	if (l > 0) printf "ksight / libbpf-tools extra: %.2f (target <= 0.6)\n", k / l;
	if (f > 0) printf "ksight / floor extra:        %.2f (target <= 2)\n", k / f;
}'

[ "${STATS:-0}" = 1 ] || exit 0
# Program run time alone: the programs a tracer loaded are those that were not there before it started.
prog_ids() { bpftool -j prog show | jq -r '.[].id' | sort -n; }
echo
echo "BPF program run time (kernel.bpf_stats_enabled): mean ns per run, and per round trip"
echo "(2 wakeups + 2 switches); the dispatch around each program is what the floor's end-to-end figure prices"
sysctl -q -w kernel.bpf_stats_enabled=1
for c in floor ksight libbpf-tools bpftrace; do
	avail $c || continue
	prog_ids >"$TMP/before"
	start_tracer $c || continue
	prog_ids >"$TMP/after"
	ids=$(comm -13 "$TMP/before" "$TMP/after" | tr '\n' ' ')
	build/workloads/pingpong -n "$ROUNDS" -c $CPU >/dev/null
	# only the tracer's own sched programs: others may load programs meanwhile
	bpftool -j prog show | jq -r --arg ids "$ids" '
		($ids | split(" ") | map(select(. != "") | tonumber)) as $want
		| [.[] | select((.id as $i | $want | index($i)) and (.name // "" | test("^(floor_|sched_)")))
		  | {name, mean: ((.run_time_ns // 0) / ((.run_cnt // 0) + 0.0001))}]
		| (map(select(.name | test("wakeup$|wakeup__|^floor_wakeup$"))) | map(.mean) | add // 0) as $w
		| (map(select(.name | test("switch"))) | map(.mean) | add // 0) as $s
		| "\(2 * $w + 2 * $s | floor) ns/rt  (" + (map("\(.name) \(.mean | floor)ns") | join(", ")) + ")"' |
		sed "s/^/$(printf '%-14s' "$c") /"
	stop_tracer
done
sysctl -q -w kernel.bpf_stats_enabled=0
