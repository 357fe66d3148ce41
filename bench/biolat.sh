#!/bin/bash
# Overhead benchmark of `ksight biolat` against an empty-program floor and libbpf-tools biolatency on an O_DIRECT 4 KiB read loop.
#
# The device is a loop device over a file in /dev/shm: about 17 us per read
# on a quiet machine, short enough to show tracing cost (a virtio disk's
# 60-85 us hide it).  Where its reads complete depends on the kernel's
# rq_affinity (1 by default: the submitter's CPU group, here both CPUs):
# measured on 6.18 with bpftrace, 11777 of 20000 completions ran in
# ksoftirqd/0 while the reader was pinned to CPU 1, and that share moves
# from run to run.  A completion on the other CPU pulls the lines its
# issue wrote (biolatency's hash element and bucket, ksight's tag slot):
# both tracers' in-kernel costs change with the share, biolatency's most
# (same run, bpf_stats over the floor: rq_affinity 2, every completion
# on the reader's CPU: biolatency 474 ns, ksight 436; rq_affinity 1:
# 840 and 582).  RQ_AFFINITY sets it for the run (0, 1 or 2; unset: the
# kernel's).  For every tracer: start it, wait until it says
# it is attached, run the pinned read loop, stop it and check that its report saw
# the reads.  Each tracer run is paired with an untraced run of the same
# loop, in alternating order (baseline first in one round, tracer first in
# the next); the cost of a tracer is the median over ROUNDS of (traced -
# untraced) ns per read: the machine is shared and noisy, adjacent runs
# cancel slow drift and the median drops rounds hit by someone's burst.
#
# Environment: ROUNDS (9), READS per run (20000), CPU for the loop (the
# last), TOOLS (see tool_def), SETTLE seconds between attach and loop (0.3),
# RQ_AFFINITY (see above), KSIGHT (./ksight), KSIGHT_B and KSIGHT_C (other builds for the tools
# ksight_b and ksight_c, e.g. the one before a change: all in the same
# alternating rounds), STATS_OUT (a copy of the pass's per-round figures), BIOLATENCY (/usr/sbin/biolatency), STATS_ROUNDS (5;
# 0: none) of the in-kernel pass (kernel.bpf_stats_enabled: each program's
# own run time, free of the wall clock's noise), OUT (build/bench/biolat.json).
set -u
cd "$(dirname "$0")/.." || exit 1
. bench/lib.sh

ROUNDS=${ROUNDS:-9}
READS=${READS:-20000}
CPU=${CPU:-$(($(nproc) - 1))}
TOOLS=${TOOLS:-"floor ksight ksight_pid biolatency"}
KSIGHT=${KSIGHT:-./ksight}
KSIGHT_B=${KSIGHT_B:-./ksight}
KSIGHT_C=${KSIGHT_C:-./ksight}
BIOLATENCY=${BIOLATENCY:-/usr/sbin/biolatency}
OUT=${OUT:-$B/biolat.json}
STATS_ROUNDS=${STATS_ROUNDS:-5}
DIOLOAD=build/workloads/dioload

[ "$(id -u)" = 0 ] || die "needs root (loads BPF programs, makes a loop device)"
for c in jq losetup taskset clang-14 stdbuf; do
	command -v "$c" >/dev/null || die "'$c' is missing; run 'make setup'"
done
for f in "$KSIGHT" "$DIOLOAD" build/libksight.a; do
	[ -e "$f" ] || die "'$f' is missing; run 'make all'"
done
bench_floor block_floor

TMP=$(mktemp -d /tmp/ksight-bench-biolat.XXXXXX)
IMG=/dev/shm/ksight-bench-biolat-$$.img
LOOP=""
cleanup() {
	bench_stop_tracer
	bench_stats_restore
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
if [ -n "${RQ_AFFINITY:-}" ]; then
	echo "$RQ_AFFINITY" > "/sys/block/$DEV/queue/rq_affinity" || die "cannot set rq_affinity $RQ_AFFINITY on $DEV"
fi

tool_def() {
	READY_ON=err
	case $1 in
	floor) CMD=("$FLOOR" "$B/block_floor.bpf.o"); READY=tracing
		DESC="empty programs on block_rq_issue, block_rq_requeue, block_rq_complete (the hooks of the default mode)" ;;
	ksight) CMD=("$KSIGHT" biolat -j -n 0); READY=tracing
		DESC="ksight biolat (by disk: latency, size and depth histograms)" ;;
	ksight_b) CMD=("$KSIGHT_B" biolat -j -n 0); READY=tracing
		DESC="ksight biolat by disk, from \$KSIGHT_B (another build: before and after in one run)" ;;
	ksight_c) CMD=("$KSIGHT_C" biolat -j -n 0); READY=tracing
		DESC="ksight biolat by disk, from \$KSIGHT_C (a third build)" ;;
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

# One pinned run of the read loop; prints the median ns of its reads (a busy machine delays some).
loop() {
	taskset -c "$CPU" "$DIOLOAD" -T -r "$READS" -s 1024 "$LOOP"
}

# How many loop-device requests the tool's report shows.
seen() {
	case $1 in
	ksight | ksight_b | ksight_c | ksight_Q) jq --arg d "$DEV" '[.rows[] | select(.disk == $d) | .count] | add // 0' "$2" ;;
	ksight_pid) jq '[.rows[] | select(.comm == "dioload") | .count] | add // 0' "$2" ;;
	biolatency*) awk -F'[:|]' '/->/ { n += $2 } END { print n + 0 }' "$2" ;;
	*) echo -1 ;;
	esac
}

RQAFF=$(cat "/sys/block/$DEV/queue/rq_affinity" 2>/dev/null || echo unknown)
WHAT="$READS O_DIRECT 4 KiB reads per run on $LOOP (over /dev/shm), CPU $CPU, rq_affinity $RQAFF"
echo "bench: $WHAT, $ROUNDS rounds; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
bench_rounds "$READS"
bench_bpf_stats "$STATS_ROUNDS"
[ -n "${STATS_OUT:-}" ] && cp "$TMP/stats" "$STATS_OUT"
# wall: extra ns per read over the untraced run, the floor's taken off;
# bpf: the programs' own run time per read over the floor's programs'
EXTRA_JSON='(map({(.tool): .bpf_stats.ns_per_op}) | add) as $b
	| def over(x; t): if x[t] and x.floor then x[t] - x.floor else null end;
	def ratio(x): if over(x; "ksight") and over(x; "biolatency") and over(x; "biolatency") > 0
		then (over(x; "ksight") / over(x; "biolatency") * 1000 | round / 1000) else null end;
	{ksight_extra_over_floor_ns: over($e; "ksight"), ksight_vs_biolatency: ratio($e),
	 bpf_over_floor_ns: ([$b | keys[] | select(. != "floor") | {(.): over($b; .)}] | add),
	 bpf_ksight_vs_biolatency: ratio($b), target_ratio: 0.5}'
bench_summary "$READS"
jq -r '"\nwall: ksight extra over the floor \(.ksight_extra_over_floor_ns // "n/a") ns per read; ksight / biolatency over the floor: \(.ksight_vs_biolatency // "n/a")",
	"bpf run time over the floor per read: \(.bpf_over_floor_ns // {} | to_entries | map("\(.key) \(.value // "-")") | join(", ")); ksight / biolatency: \(.bpf_ksight_vs_biolatency // "n/a") (target <= \(.target_ratio))"' "$OUT"
echo "bench: results in $OUT" >&2
