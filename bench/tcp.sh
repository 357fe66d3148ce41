#!/bin/bash
# Overhead benchmark of `ksight tcp` against an empty-program floor and reference tracers on a loopback TCP request/response loop.
#
# One byte each way per round trip, TCP_NODELAY, client and server pinned
# to one CPU: every round trip crosses the hooks ksight attaches (tcp_probe
# at each receiving end, and whatever state changes and drops come along),
# so the per-round-trip difference is the tracing cost of two received
# segments.  Two figures per run: the median wall ns of a round trip, and
# the CPU ns the client and the server spent per round trip (loopback
# receive work runs in the sender's softirq and is charged to it; no time
# another tenant held the CPU is in it).  Paired rounds and medians (see
# bench/lib.sh); then a short pass with kernel.bpf_stats_enabled gives each
# tool's programs' own run time per round trip, the steadiest figure of
# the three on a shared machine.  Tools that cannot attach on this kernel
# (libbpf-tools tcprtt needs fentry or kprobes) are skipped and listed.
#
# Environment: ROUNDS (21), RR round trips per run (20000), CPU (the last),
# TOOLS (see tool_def), PORT (47123), SETTLE (0.3), STATS_ROUNDS (3; 0:
# none), KSIGHT (./ksight), KSIGHT_BASE (another build, for TOOLS "base"),
# TCPRTT (/usr/sbin/tcprtt), OUT (build/bench/tcp.json).
set -u
cd "$(dirname "$0")/.." || exit 1
. bench/lib.sh

ROUNDS=${ROUNDS:-21}
RR=${RR:-20000}
CPU=${CPU:-$(($(nproc) - 1))}
TOOLS=${TOOLS:-"floor ksight ksight_pid tcprtt bpftrace"}
PORT=${PORT:-47123}
STATS_ROUNDS=${STATS_ROUNDS:-3}
KSIGHT=${KSIGHT:-./ksight}
TCPRTT=${TCPRTT:-/usr/sbin/tcprtt}
KSIGHT_BASE=${KSIGHT_BASE:-}
OUT=${OUT:-$B/tcp.json}
TCPLOAD=build/workloads/tcpload
METRICS="ns cpu_ns"
# the RTT part of ksight tcp as a one-liner: a histogram of the smoothed RTT per flow at each received segment
BT_PROG='tracepoint:tcp:tcp_probe { @srtt_us[args->sport, args->dport] = hist(args->srtt); }'

[ "$(id -u)" = 0 ] || die "needs root (loads BPF programs)"
for c in jq taskset clang-14 stdbuf bpftool; do
	command -v "$c" >/dev/null || die "'$c' is missing; run 'make setup'"
done
for f in "$KSIGHT" "$TCPLOAD" build/libksight.a; do
	[ -e "$f" ] || die "'$f' is missing; run 'make all'"
done
bench_floor tcp_floor

TMP=$(mktemp -d /tmp/ksight-bench-tcp.XXXXXX)
S_PID=""
cleanup() {
	bench_stop_tracer
	bench_stats_restore
	[ -n "$S_PID" ] && kill "$S_PID" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The hook ksight tcp picks on this kernel; the floor takes the same where it has that variant.
HOOK=$("$KSIGHT" tcp -d 0.1 -j 2>&1 >/dev/null | sed -n 's/.*tracing tcp (hook \([a-z_]*\)).*/\1/p')
[ -n "$HOOK" ] || die "ksight tcp does not start: $("$KSIGHT" tcp -d 0.1 2>&1 | head -1)"
FLOOR_HOOK=()
case $HOOK in tp_btf | raw_tp | tp) FLOOR_HOOK=(--hook "$HOOK") ;; esac

tool_def() {
	READY_ON=err
	case $1 in
	floor) CMD=("$FLOOR" "${FLOOR_HOOK[@]}" "$B/tcp_floor.bpf.o"); READY=tracing
		DESC="empty programs on inet_sock_set_state, tcp_retransmit_skb, kfree_skb, tcp_probe, consume_skb, sk_data_ready, accept (${FLOOR_HOOK[1]:-first that loads}; ksight: $HOOK)" ;;
	ksight) CMD=("$KSIGHT" tcp -j -n 0); READY=tracing
		DESC="ksight tcp (by flow: retransmits, drops, RTT and connect histograms; hook $HOOK)" ;;
	ksight_pid) CMD=("$KSIGHT" tcp --by pid -j -n 0); READY=tracing
		DESC="ksight tcp --by pid" ;;
	base) CMD=("$KSIGHT_BASE" tcp -j -n 0); READY=tracing
		DESC="ksight tcp by flow, the build in KSIGHT_BASE (a before/after comparison)" ;;
	tcprtt) CMD=("$TCPRTT"); READY=Tracing; READY_ON=out
		DESC="libbpf-tools tcprtt (log2 RTT histogram at tcp_rcv_established, fentry or kprobe)" ;;
	bpftrace) CMD=(bpftrace -e "$BT_PROG"); READY=Attaching; READY_ON=out; ATTACHED=perf
		DESC="bpftrace one-liner: srtt histogram per (sport, dport) at tracepoint tcp:tcp_probe" ;;
	*) return 1 ;;
	esac
}

# a tool that is not installed is skipped as one that does not attach (bench_usable_tools)
for t in $TOOLS; do
	tool_def "$t" || die "unknown tool '$t'"
done

# One pinned request/response run against a fresh echo server; prints the
# median wall ns of a round trip and the client's and server's CPU ns per round trip.
loop() {
	local i=0 out cpu
	# gone before the server starts: the previous run's "listening" must not be read as this one's
	rm -f "$TMP/server"
	taskset -c "$CPU" "$TCPLOAD" -s -e 127.0.0.1 "$PORT" >"$TMP/server" &
	S_PID=$!
	while ! grep -q listening "$TMP/server" 2>/dev/null; do
		i=$((i + 1))
		[ $i -gt 1000 ] && kill "$S_PID" && die "the echo server does not listen: $(cat "$TMP/server")"
		sleep 0.01
	done
	out=$(taskset -c "$CPU" "$TCPLOAD" -c 127.0.0.1 "$PORT" -r "$RR") || { kill "$S_PID"; die "the client failed"; }
	wait "$S_PID"
	S_PID=""
	cpu=$(awk '$1 == "cpu_ns" { print $2 }' "$TMP/server")
	[ -n "$cpu" ] || die "the echo server did not report its CPU time: $(cat "$TMP/server")"
	set -- $out
	awk -v w="$1" -v c="$2" -v s="$cpu" -v n="$RR" 'BEGIN { printf "%.1f %.1f\n", w, (c + s) / n }'
}

# How many received segments of the loop the tool's report timed (both ends).
seen() {
	case $1 in
	ksight | base) jq --arg p ":$PORT" '[.rows[] | select((.local | endswith($p)) or (.remote | endswith($p))) | .rtt_ns.count // 0] | add // 0' "$2" ;;
	ksight_pid) jq '[.rows[] | select(.comm == "tcpload") | .rtt_ns.count // 0] | add // 0' "$2" ;;
	# system wide, no flow to pick: every segment it timed
	tcprtt) awk -F'[:|]' '/->/ { n += $2 } END { print n + 0 }' "$2" ;;
	bpftrace) awk -v p="$PORT" '/^@/ { on = ($0 ~ "[[ ]" p "[],]") } on && /^\[/ { l = $0; sub(/\|.*/, "", l); k = split(l, a, " "); n += a[k] }
			END { print n + 0 }' "$2" ;;
	*) echo -1 ;;
	esac
}

WHAT="$RR loopback TCP request/response round trips (1 byte each way) per run, client and server on CPU $CPU"
echo "bench: $WHAT, $ROUNDS rounds; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
bench_usable_tools
bench_rounds "$RR"
bench_bpf_stats "$STATS_ROUNDS"
# each tool's cost over the floor's, in ns per round trip: wall, CPU, and its programs' own run time
EXTRA_JSON='(map({(.tool): .}) | add) as $t
	| def over(a; f): ($t[a] | f) as $x | ($t.floor | f) as $y | if $x and $y then ($x - $y) * 10 | round / 10 else null end;
	{over_floor_ns_per_rr: ([$t | keys[] | select(. != "floor") | {(.): {wall: over(.; .extra_ns), cpu: over(.; .extra_cpu_ns),
		bpf_run_time: over(.; .bpf_stats.ns_per_op)}}] | add)}'
bench_summary "$RR"
jq -r '"", "load average before \(.load_before), after \(.load_after)",
	"extra ns per round trip over the floor (wall, cpu, bpf run time):",
	(.over_floor_ns_per_rr // {} | to_entries[] | "  \(.key): \(.value.wall // "-") wall, \(.value.cpu // "-") cpu, \(.value.bpf_run_time // "-") bpf"),
	"",
	"bpf_stats per program (runs and ns per round trip, ns per run):",
	(.tools[] | select(.bpf_stats) | .tool as $t | .bpf_stats.programs[] |
		"  \($t) \(.prog) (\(.type)): \(.runs_per_op) runs, \(.ns_per_op) ns per round trip, \(.ns_per_run) ns per run")' "$OUT"
echo "bench: results in $OUT" >&2
