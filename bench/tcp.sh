#!/bin/bash
# Overhead benchmark of `ksight tcp` against an empty-program floor on a loopback TCP request/response loop.
#
# One byte each way per round, TCP_NODELAY, client and server pinned to one
# CPU: every round crosses the hooks ksight attaches (tcp_probe at each
# receiving end, and whatever state changes and drops come along), so the
# per-round difference is the tracing cost of two received segments.
# Paired rounds and medians as in bench/biolat.sh (see bench/lib.sh).
#
# Environment: ROUNDS (9), RR round trips per run (20000), CPU (the last),
# TOOLS (see tool_def), PORT (47123), KSIGHT (./ksight), OUT
# (build/bench/tcp.json).
set -u
cd "$(dirname "$0")/.." || exit 1
. bench/lib.sh

ROUNDS=${ROUNDS:-9}
RR=${RR:-20000}
CPU=${CPU:-$(($(nproc) - 1))}
TOOLS=${TOOLS:-"floor ksight ksight_pid"}
PORT=${PORT:-47123}
KSIGHT=${KSIGHT:-./ksight}
OUT=${OUT:-$B/tcp.json}
TCPLOAD=build/workloads/tcpload

[ "$(id -u)" = 0 ] || die "needs root (loads BPF programs)"
for c in jq taskset clang-14 stdbuf; do
	command -v "$c" >/dev/null || die "'$c' is missing; run 'make setup'"
done
for f in "$KSIGHT" "$TCPLOAD" build/libksight.a; do
	[ -e "$f" ] || die "'$f' is missing; run 'make all'"
done
bench_floor tcp_floor

TMP=$(mktemp -d /tmp/ksight-bench-tcp.XXXXXX)
T_PID=""
S_PID=""
cleanup() {
	[ -n "$T_PID" ] && kill -INT "$T_PID" 2>/dev/null && wait "$T_PID" 2>/dev/null
	[ -n "$S_PID" ] && kill "$S_PID" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

tool_def() {
	READY_ON=err
	case $1 in
	floor) CMD=("$FLOOR" "$B/tcp_floor.bpf.o"); READY=tracing
		DESC="empty programs on inet_sock_set_state, tcp_retransmit_skb, kfree_skb, tcp_probe, accept" ;;
	ksight) CMD=("$KSIGHT" tcp -j -n 0); READY=tracing
		DESC="ksight tcp (by flow: retransmits, drops, RTT and connect histograms)" ;;
	ksight_pid) CMD=("$KSIGHT" tcp --by pid -j -n 0); READY=tracing
		DESC="ksight tcp --by pid" ;;
	*) return 1 ;;
	esac
}

for t in $TOOLS; do
	tool_def "$t" || die "unknown tool '$t'"
done

# One pinned request/response run against a fresh echo server; prints ns per round trip.
loop() {
	local i=0 ns
	taskset -c "$CPU" "$TCPLOAD" -s -e 127.0.0.1 "$PORT" >"$TMP/server" &
	S_PID=$!
	while ! grep -q listening "$TMP/server" 2>/dev/null; do
		i=$((i + 1))
		[ $i -gt 1000 ] && die "the echo server does not listen: $(cat "$TMP/server")"
		sleep 0.01
	done
	ns=$(taskset -c "$CPU" "$TCPLOAD" -c 127.0.0.1 "$PORT" -r "$RR") || die "the client failed"
	wait "$S_PID"
	S_PID=""
	echo "$ns"
}

# How many received segments of the loop the tool's report timed (both ends).
seen() {
	case $1 in
	ksight) jq --arg p ":$PORT" '[.rows[] | select((.local | endswith($p)) or (.remote | endswith($p))) | .rtt_ns.count // 0] | add // 0' "$2" ;;
	ksight_pid) jq '[.rows[] | select(.comm == "tcpload") | .rtt_ns.count // 0] | add // 0' "$2" ;;
	*) echo -1 ;;
	esac
}

WHAT="$RR loopback TCP request/response round trips (1 byte each way) per run, CPU $CPU"
echo "bench: $WHAT, $ROUNDS rounds; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
bench_rounds "$RR"
EXTRA_JSON='{ksight_extra_over_floor_ns: (if $e.ksight and $e.floor then $e.ksight - $e.floor else null end)}'
bench_summary
jq -r '"\nksight extra over the floor: \(.ksight_extra_over_floor_ns // "n/a") ns per round trip"' "$OUT"
echo "bench: results in $OUT" >&2
