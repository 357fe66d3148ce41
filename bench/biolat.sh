#!/bin/bash
# Overhead benchmark of `ksight biolat` against an empty-program floor and libbpf-tools biolatency on an O_DIRECT 4 KiB read loop.
#
# The device is a loop device over a file in /dev/shm: about 17 us per read
# on a quiet machine, short enough to show tracing cost (a virtio disk's
# 60-85 us hide it).  For every tracer: start it, wait until it says it is
# attached, run the pinned read loop, stop it and check that its report saw
# the reads.  Each tracer run is paired with an untraced run of the same
# loop, in alternating order (baseline first in one round, tracer first in
# the next); the cost of a tracer is the median over ROUNDS of (traced -
# untraced) ns per read: the machine is shared and noisy, adjacent runs
# cancel slow drift and the median drops rounds hit by someone's burst.
#
# Environment: ROUNDS (9), READS per run (20000), CPU for the loop (the
# last), TOOLS (see tool_def), SETTLE seconds between attach and loop (0.3),
# KSIGHT (./ksight), BIOLATENCY (/usr/sbin/biolatency), OUT
# (build/bench/biolat.json).
set -u
cd "$(dirname "$0")/.." || exit 1

B=build/bench
ROUNDS=${ROUNDS:-9}
READS=${READS:-20000}
CPU=${CPU:-$(($(nproc) - 1))}
TOOLS=${TOOLS:-"floor ksight ksight_pid biolatency"}
SETTLE=${SETTLE:-0.3}
KSIGHT=${KSIGHT:-./ksight}
BIOLATENCY=${BIOLATENCY:-/usr/sbin/biolatency}
OUT=${OUT:-$B/biolat.json}
DIOLOAD=build/workloads/dioload
FLOOR=$B/block_floor

die() { echo "bench: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (loads BPF programs, makes a loop device)"
for c in jq losetup taskset clang-14 bpftool; do
	command -v "$c" >/dev/null || die "'$c' is missing; run 'make setup'"
done
for f in "$KSIGHT" "$DIOLOAD" build/libksight.a; do
	[ -e "$f" ] || die "'$f' is missing; run 'make all'"
done

# The floor: empty programs on the tracepoints biolat attaches by default.
# Built here so the benchmark needs nothing beyond 'make all'.
if [ ! -x "$FLOOR" ] || [ bench/block_floor.c -nt "$FLOOR" ] || [ bench/block_floor.bpf.c -nt "$FLOOR" ]; then
	mkdir -p "$B/bpf" "$B/skel"
	clang-14 -g -O2 -target bpf -D__TARGET_ARCH_x86 -Ibpf -Iinclude -Wall -Werror \
		-c bench/block_floor.bpf.c -o "$B/bpf/block_floor.bpf.o" &&
		bpftool gen skeleton "$B/bpf/block_floor.bpf.o" name ks_block_floor >"$B/skel/block_floor.skel.h" &&
		${CC:-cc} -O2 -g -Wall -Wextra -Werror -std=gnu11 -D_GNU_SOURCE -Iinclude -Isrc -Ibuild/skel \
			-I"$B/skel" -o "$FLOOR" bench/block_floor.c build/libksight.a -lbpf -lelf -lz -lm ||
		die "cannot build $FLOOR"
fi

TMP=$(mktemp -d /tmp/ksight-bench-biolat.XXXXXX)
IMG=/dev/shm/ksight-bench-biolat-$$.img
LOOP=""
T_PID=""
cleanup() {
	[ -n "$T_PID" ] && kill -INT "$T_PID" 2>/dev/null && wait "$T_PID" 2>/dev/null
	[ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null
	rm -f "$IMG"
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

dd if=/dev/zero of="$IMG" bs=1M count=16 2>/dev/null || die "cannot write $IMG"
LOOP=$(losetup -f --show "$IMG") || die "cannot attach a loop device"
command -v udevadm >/dev/null && udevadm settle -t 5 2>/dev/null
DEV=${LOOP#/dev/}

# tool_def NAME: sets CMD (argv), READY (what it prints once attached, on
# READY_ON: err or out), DESC; 1 for unknown names.
tool_def() {
	READY_ON=err
	case $1 in
	floor) CMD=("$FLOOR"); READY=tracing
		DESC="empty programs on block_getrq, block_rq_issue, block_rq_requeue, block_rq_complete" ;;
	ksight) CMD=("$KSIGHT" biolat -j -n 0); READY=tracing
		DESC="ksight biolat (by disk: latency, size and depth histograms)" ;;
	ksight_pid) CMD=("$KSIGHT" biolat --by pid -j -n 0); READY=tracing
		DESC="ksight biolat --by pid (submitter recorded at block_getrq)" ;;
	ksight_Q) CMD=("$KSIGHT" biolat -Q -j -n 0); READY=tracing
		DESC="ksight biolat -Q (queue time too)" ;;
	biolatency) CMD=("$BIOLATENCY"); READY=Tracing; READY_ON=out
		DESC="libbpf-tools biolatency (log2 latency histogram)" ;;
	biolatency_D) CMD=("$BIOLATENCY" -D); READY=Tracing; READY_ON=out
		DESC="libbpf-tools biolatency -D (per disk)" ;;
	*) return 1 ;;
	esac
}

for t in $TOOLS; do
	tool_def "$t" || die "unknown tool '$t'"
	[ -x "${CMD[0]}" ] || die "'${CMD[0]}' is missing"
done

# One pinned run of the read loop; prints its mean ns per read.
loop() {
	taskset -c "$CPU" "$DIOLOAD" -t -r "$READS" -s 1024 "$LOOP"
}

# Starts tool $1; sets T_PID, T_OUT, T_ERR.  1 when it did not attach in 30 s.
t_start() {
	local log i=0
	tool_def "$1"
	T_OUT=$TMP/$1.out
	T_ERR=$TMP/$1.err
	stdbuf -oL -eL "${CMD[@]}" >"$T_OUT" 2>"$T_ERR" &
	T_PID=$!
	log=$T_ERR
	[ "$READY_ON" = out ] && log=$T_OUT
	while ! grep -q "$READY" "$log" 2>/dev/null; do
		i=$((i + 1))
		if [ $i -gt 3000 ] || ! kill -0 "$T_PID" 2>/dev/null; then
			echo "bench: $1 did not attach: $(head -3 "$T_ERR" "$T_OUT")" >&2
			kill -INT "$T_PID" 2>/dev/null
			wait "$T_PID" 2>/dev/null
			T_PID=""
			return 1
		fi
		sleep 0.01
	done
	sleep "$SETTLE"
}

# Stops the tool; prints how many loop-device requests its report shows (-1: not checked).
t_stop() {
	kill -INT "$T_PID"
	wait "$T_PID"
	T_PID=""
	case $1 in
	ksight | ksight_Q) jq --arg d "$DEV" '[.rows[] | select(.disk == $d) | .count] | add // 0' "$T_OUT" ;;
	ksight_pid) jq '[.rows[] | select(.comm == "dioload") | .count] | add // 0' "$T_OUT" ;;
	biolatency*) awk -F'[:|]' '/->/ { n += $2 } END { print n + 0 }' "$T_OUT" ;;
	*) echo -1 ;;
	esac
}

# One traced run: prints "ns_per_read requests_seen".
tool_run() {
	local ns seen
	t_start "$1" || return 1
	ns=$(loop)
	seen=$(t_stop "$1")
	echo "$ns $seen"
}

median() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

echo "bench: loop device $LOOP over $IMG, $READS O_DIRECT 4 KiB reads per run on CPU $CPU, $ROUNDS rounds" >&2
echo "bench: load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
results=$TMP/results
: >"$results"
for r in $(seq 1 "$ROUNDS"); do
	for t in $TOOLS; do
		if [ $((r % 2)) = 1 ]; then
			base=$(loop)
			traced=$(tool_run "$t") || die "$t failed"
		else
			traced=$(tool_run "$t") || die "$t failed"
			base=$(loop)
		fi
		set -- $traced
		[ "$2" = -1 ] || [ "$2" -ge "$READS" ] || die "$t saw $2 requests of $READS"
		echo "$t $r $base $1 $2" >>"$results"
		printf 'bench: round %d %-12s untraced %8.0f ns  traced %8.0f ns  extra %7.0f ns\n' \
			"$r" "$t" "$base" "$1" "$(echo "$1 $base" | awk '{ print $1 - $2 }')" >&2
	done
done

# Per tool: medians of the untraced runs, the traced runs and the paired differences.
json=$TMP/json
: >"$json"
for t in $TOOLS; do
	tool_def "$t"
	b=$(awk -v t="$t" '$1 == t { print $3 }' "$results" | median)
	x=$(awk -v t="$t" '$1 == t { print $4 }' "$results" | median)
	d=$(awk -v t="$t" '$1 == t { print $4 - $3 }' "$results" | median)
	jq -n --arg t "$t" --arg desc "$DESC" --argjson b "$b" --argjson x "$x" --argjson d "$d" \
		'{tool: $t, desc: $desc, untraced_ns: $b, traced_ns: $x, extra_ns: $d}' >>"$json"
done
jq -s --arg dev "$DEV" --argjson reads "$READS" --argjson rounds "$ROUNDS" --arg load "$(cut -d' ' -f1-3 /proc/loadavg)" '
	(map({(.tool): .extra_ns}) | add) as $e |
	{device: $dev, reads_per_run: $reads, rounds: $rounds, load_after: $load, tools: .,
	 ksight_extra_over_floor_ns: (if $e.ksight and $e.floor then $e.ksight - $e.floor else null end),
	 ksight_vs_biolatency: (if $e.ksight and $e.biolatency and $e.biolatency > 0 then ($e.ksight / $e.biolatency * 1000 | round / 1000) else null end),
	 target_ratio: 0.3}' "$json" >"$OUT"

printf '\n%-13s %12s %12s %10s  %s\n' tool untraced_ns traced_ns extra_ns description
jq -r '.tools[] | [.tool, .untraced_ns, .traced_ns, .extra_ns, .desc] | @tsv' "$OUT" |
	while IFS=$'\t' read -r t b x d desc; do
		printf '%-13s %12.0f %12.0f %10.0f  %s\n' "$t" "$b" "$x" "$d" "$desc"
	done
jq -r '"\nksight extra over the floor: \(.ksight_extra_over_floor_ns // "n/a") ns per read; ksight / biolatency extra: \(.ksight_vs_biolatency // "n/a") (target <= \(.target_ratio))"' "$OUT"
echo "bench: results in $OUT" >&2
