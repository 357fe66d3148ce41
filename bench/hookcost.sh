#!/bin/bash
# In-kernel cost of single BPF operations (clock and other helper calls, cold and warm cache lines, map lookups) on the syscall hooks of this machine: what bounds bench/syscalls.sh's and bench/biolat.sh's per-event figures.
#
# Each probe is an object of bench/hookcost.bpf.c (see there for what each
# does), attached by objfloor on the hook ksight syscalls picks here, while
# the pinned getppid loop runs; the kernel's BPF run-time statistics give
# each program's own time per run over the loop.  A probe's cost is, per
# round, its program's time less the empty probe's on the same hook, the
# median over ROUNDS; probes are rotated from round to round.
#
# Environment: ROUNDS (5), CALLS per repetition (100000), REPS (5), CPU for
# the loop (the last), PROBES (all of the Makefile's HOOKCOST_PROBES, empty
# first), KSIGHT (./ksight, for its hook), SETTLE seconds between attach and
# loop (0.3), OUT (build/bench/hookcost.json).  The rounds, start and stop
# of each probe and the statistics switch are bench/lib.sh's.
set -u
cd "$(dirname "$0")/.." || exit 1
. bench/lib.sh

ROUNDS=${ROUNDS:-5}
CALLS=${CALLS:-100000}
REPS=${REPS:-5}
CPU=${CPU:-$(($(nproc) - 1))}
PROBES=${PROBES:-"empty clock clock2 pid cpu lines4 pages4 warm4 pcpu hash cgroup follow"}
KSIGHT=${KSIGHT:-./ksight}
OUT=${OUT:-$B/hookcost.json}

[ "$(id -u)" = 0 ] || die "needs root (loads BPF programs, sets kernel.bpf_stats_enabled)"
for f in "$B/getppid_loop" "$FLOOR" "$KSIGHT"; do
	[ -x "$f" ] || die "'$f' is missing; run 'make bench-tools'"
done
[[ " $PROBES " == *" empty "* ]] || die "PROBES must include 'empty': the others are measured against it"
for p in $PROBES; do
	[ -e "$B/bpf/hookcost-$p.bpf.o" ] || die "no probe '$p' ($B/bpf/hookcost-$p.bpf.o); run 'make bench-tools'"
done
for c in jq bpftool stdbuf; do
	command -v "$c" >/dev/null || die "'$c' is missing; run 'make setup'"
done

TMP=$(mktemp -d /tmp/ksight-hookcost.XXXXXX)
cleanup() {
	bench_stop_tracer
	bench_stats_restore
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The hook ksight picks on this kernel; the probes use the same one.
HOOK=$("$KSIGHT" syscalls -d 0.1 -j 2>&1 >/dev/null | sed -n 's/.*tracing syscalls (hook \([a-z_]*\)).*/\1/p')
[ -n "$HOOK" ] || die "ksight syscalls does not start: $("$KSIGHT" syscalls -d 0.1 2>&1 | head -1)"

# bench/lib.sh's interface: each probe is a "tool", the getppid loop the workload.
tool_def() {
	READY=tracing
	READY_ON=err
	CMD=("$FLOOR" --hook "$HOOK" "$B/bpf/hookcost-$1.bpf.o")
	DESC="probe $1 on sys_enter+sys_exit ($HOOK)"
}
loop() {
	"$B/getppid_loop" -n "$CALLS" -r "$REPS" -c "$CPU"
}
seen() {
	echo -1
}

TOOLS=$PROBES
echo "bench: $(wc -w <<<"$PROBES") probes x $ROUNDS rounds, hook $HOOK, getppid loop ${CALLS} x $REPS on cpu $CPU" >&2
bench_bpf_stats "$ROUNDS"

mkdir -p "$(dirname "$OUT")"
jq -s --arg hook "$HOOK" --arg kernel "$(uname -r)" --argjson rounds "$ROUNDS" \
	--arg cs "$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)" '
	def median: sort | if length == 0 then null elif length % 2 == 1 then .[length / 2 | floor]
		else (.[length / 2 - 1] + .[length / 2]) / 2 end;
	def r1: if . == null then null else . * 10 | round / 10 end;
	[.[] | select(.run_cnt > 0) | {probe: .tool, round, prog: (.prog | sub("__.*"; "")), ns: (.run_time_ns / .run_cnt)}]
	| . as $all
	| [$all[] | .probe] | unique as $ps
	| {kernel: $kernel, hook: $hook, clocksource: $cs, rounds: $rounds,
	   probes: ($ps | map(. as $p | {($p): (["sys_enter", "sys_exit"] | map(. as $h |
		{($h): {ns: ([$all[] | select(.probe == $p and .prog == $h) | .ns] | median | r1),
			extra_ns: ([$all[] | select(.probe == $p and .prog == $h) | . as $x
				| ($all[] | select(.probe == "empty" and .prog == $h and .round == $x.round) | $x.ns - .ns)]
				| median | r1)}}) | add)}) | add)}' "$TMP/stats" >"$OUT" || die "no results"

printf '\nin-kernel cost per run on %s (%s, clocksource %s), median of %d rounds:\n' \
	"$(jq -r .hook "$OUT")" "$(jq -r .kernel "$OUT")" "$(jq -r .clocksource "$OUT")" "$ROUNDS"
printf '%-8s %12s %12s %14s %14s\n' probe "enter ns" "exit ns" "enter extra" "exit extra"
for p in $PROBES; do
	jq -r --arg p "$p" '.probes[$p] | [$p, .sys_enter.ns, .sys_exit.ns, .sys_enter.extra_ns, .sys_exit.extra_ns]
		| map(tostring) | @tsv' "$OUT" | awk -F'\t' '{ printf "%-8s %12s %12s %14s %14s\n", $1, $2, $3, $4, $5 }'
done
echo "bench: results in $OUT" >&2
