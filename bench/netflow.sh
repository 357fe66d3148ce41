#!/bin/bash
# In-kernel cost per packet of `ksight netflow` at XDP and tcx ingress over an empty program on the same hook, from kernel.bpf_stats_enabled.
#
# A veth pair between two namespaces made here: A sends PKTS UDP datagrams
# of 64 bytes to B, where either the floor (build/bench/netflow_floor: one
# empty program, attached by a link as netflow attaches) or ksight netflow
# counts them on B's device.  Each run reads its programs' run_cnt and
# run_time_ns (bpftool) before and after the traffic: ns per packet is
# their quotient.  Rounds alternate which of the two goes first; the
# result is the median of each and of the paired differences per hook.
# The goal (issue 27): netflow under 30 ns a packet over the floor.
#
# Environment: ROUNDS (7), PKTS datagrams a run (50000), FLOWS distinct
# source ports they cycle over (16), HOOKS (xdp tc), KSIGHT (./ksight), KSIGHT_ARGS (more
# options, e.g. "--port 7": parsing alone, no packet counted), KSIGHT_BASE (another build of
# ksight run in the same rounds: before/after), OUT (build/bench/netflow.json).
set -u
cd "$(dirname "$0")/.." || exit 1
die() { echo "bench: $*" >&2; exit 1; }

ROUNDS=${ROUNDS:-7}
PKTS=${PKTS:-50000}
FLOWS=${FLOWS:-16}
HOOKS=${HOOKS:-xdp tc}
KSIGHT=${KSIGHT:-./ksight}
KSIGHT_ARGS=${KSIGHT_ARGS:-}
KSIGHT_BASE=${KSIGHT_BASE:-}
FLOOR=build/bench/netflow_floor
OUT=${OUT:-build/bench/netflow.json}

[ "$(id -u)" = 0 ] || die "needs root (namespaces, BPF programs)"
for c in jq bpftool python3 ip; do
	command -v "$c" >/dev/null || die "'$c' is missing; run 'make setup'"
done
[ -x "$KSIGHT" ] || die "'$KSIGHT' is missing; run 'make all'"
[ -x "$FLOOR" ] || make -s "$FLOOR" >/dev/null || die "cannot build $FLOOR"

A=ksight-nfb-a-$$
B=ksight-nfb-b-$$
TMP=$(mktemp -d /tmp/ksight-bench-netflow.XXXXXX)
SAVED=$(cat /proc/sys/kernel/bpf_stats_enabled)
T_PID=""
cleanup() {
	[ -n "$T_PID" ] && kill -INT "$T_PID" 2>/dev/null && wait "$T_PID" 2>/dev/null
	echo "$SAVED" >/proc/sys/kernel/bpf_stats_enabled
	ip netns del "$A" 2>/dev/null
	ip netns del "$B" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ip netns add "$A" && ip netns add "$B" && ip link add nfba$$ type veth peer name nfbb$$ &&
	ip link set nfba$$ netns "$A" && ip link set nfbb$$ netns "$B" &&
	ip -n "$A" addr add 10.197.0.1/24 dev nfba$$ && ip -n "$B" addr add 10.197.0.2/24 dev nfbb$$ &&
	ip -n "$A" link set nfba$$ up && ip -n "$B" link set nfbb$$ up || die "cannot make the namespaces"

SEND='
import socket, sys
n, flows = int(sys.argv[1]), int(sys.argv[2])
socks = []
for i in range(flows):
    socks.append(socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
p, dst = b"x" * 64, ("10.197.0.2", 9)
for i in range(n):
    socks[i % flows].sendto(p, dst)
'

# Starts tool $1 on hook $2 in B, waits for it to attach; sets T_PID.
start() {
	: >"$TMP/err"
	case $1 in
	floor) ip netns exec "$B" "$FLOOR" "$2" nfbb$$ 2>"$TMP/err" & ;;
	ksight) ip netns exec "$B" "$KSIGHT" netflow --"$2" nfbb$$ -j $KSIGHT_ARGS >"$TMP/out" 2>"$TMP/err" & ;;
	base) ip netns exec "$B" "$KSIGHT_BASE" netflow --"$2" nfbb$$ -j $KSIGHT_ARGS >"$TMP/out" 2>"$TMP/err" & ;;
	esac
	T_PID=$!
	for ((i = 0; i < 600; i++)); do
		grep -q 'attached\|tracing' "$TMP/err" && return 0
		kill -0 "$T_PID" 2>/dev/null || break
		sleep 0.05
	done
	die "$1 did not attach at $2: $(cat "$TMP/err")"
}

# run_cnt and run_time_ns summed over the programs process $1 holds
prog_stats() {
	local ids
	ids=$(cat /proc/"$1"/fdinfo/* 2>/dev/null | awk '$1 == "prog_id:" { print $2 }' | sort -un)
	for id in $ids; do bpftool -j prog show id "$id"; done |
		jq -rs '"\(map(.run_cnt // 0) | add // 0) \(map(.run_time_ns // 0) | add // 0)"'
}

# One run: ns per packet of tool $1 on hook $2.
run() {
	local c0 t0 c1 t1
	start "$1" "$2"
	read -r c0 t0 <<<"$(prog_stats "$T_PID")"
	ip netns exec "$A" python3 -c "$SEND" "$PKTS" "$FLOWS" || die "the sender failed"
	read -r c1 t1 <<<"$(prog_stats "$T_PID")"
	kill -INT "$T_PID"
	wait "$T_PID"
	T_PID=""
	# veth may drop a few when its ring is full, before any program runs
	[ $((c1 - c0)) -ge $((PKTS * 9 / 10)) ] || die "$1 at $2 ran $((c1 - c0)) times for $PKTS packets: bpf_stats switched off by another user?"
	jq -nc --arg t "$1" --arg h "$2" --argjson r "$R" --argjson c $((c1 - c0)) --argjson ns $((t1 - t0)) \
		'{tool: $t, hook: $h, round: $r, run_cnt: $c, run_time_ns: $ns, ns_per_packet: ($ns / $c)}' >>"$TMP/runs"
}

echo 1 >/proc/sys/kernel/bpf_stats_enabled
: >"$TMP/runs"
for ((R = 0; R < ROUNDS; R++)); do
	for hook in $HOOKS; do
		if ((R % 2)); then
			run ksight "$hook"; [ -n "$KSIGHT_BASE" ] && run base "$hook"; run floor "$hook"
		else
			run floor "$hook"; [ -n "$KSIGHT_BASE" ] && run base "$hook"; run ksight "$hook"
		fi
	done
	echo "bench: round $((R + 1)) of $ROUNDS done" >&2
done
echo "$SAVED" >/proc/sys/kernel/bpf_stats_enabled

mkdir -p "$(dirname "$OUT")"
jq -s --argjson pkts "$PKTS" --argjson flows "$FLOWS" --arg load "$(cut -d' ' -f1-3 /proc/loadavg)" '
	def median: sort | if length == 0 then null elif length % 2 == 1 then .[length / 2 | floor]
		else (.[length / 2 - 1] + .[length / 2]) / 2 end;
	{ what: "ns per packet in BPF programs (bpf_stats), ksight netflow over an empty program on the same hook",
	  packets_per_run: $pkts, flows: $flows, loadavg: $load, goal_extra_ns: 30,
	  hooks: (group_by(.hook) | map({ key: .[0].hook, value: (
		(map(select(.tool == "floor") | {(.round | tostring): .ns_per_packet}) | add) as $f |
		{ floor_ns: (map(select(.tool == "floor") | .ns_per_packet) | median),
		  netflow_ns: (map(select(.tool == "ksight") | .ns_per_packet) | median),
		  extra_ns: (map(select(.tool == "ksight") | .ns_per_packet - $f[.round | tostring]) | median),
		  base_extra_ns: (map(select(.tool == "base") | .ns_per_packet - $f[.round | tostring]) | median) }) }) | from_entries),
	  runs: . }' "$TMP/runs" >"$OUT"
jq -r '.hooks as $h | "hook  floor_ns  netflow_ns  extra_ns  base_extra_ns (median of \([.runs[] | select(.tool == "floor")] | length / ($h | length)) paired rounds; goal < 30)",
	(.hooks | to_entries[] | "\(.key)\t\(.value.floor_ns * 10 | round / 10)\t\(.value.netflow_ns * 10 | round / 10)\t\(.value.extra_ns * 10 | round / 10)\t\(if .value.base_extra_ns then .value.base_extra_ns * 10 | round / 10 else "-" end)")' "$OUT"
echo "bench: wrote $OUT" >&2
