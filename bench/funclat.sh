#!/bin/bash
# Benchmark: `ksight funclat` on a uprobe'd function against libbpf-tools' funclatency and bpftrace's uprobe + uretprobe one-liner, over an empty-uprobe floor: time added per call, in-kernel time per call, start-up.
#
# The workload is fl_calls's tight loop (N back-to-back calls of the noinline
# fl_tiny_a, pinned on CPU), traced by each tool in turn; bench/lib.sh's
# paired rounds give the time each tool adds to a call (traced less
# untraced), its bpf_stats pass the programs' in-kernel time per call.  The
# floor is bench/funclat_floor.bpf.c (empty programs on the same uprobe and
# uretprobe) attached by bench/funclat_load, which also attaches any object
# named in VARIANTS as a tool (throw-away builds of bpf/funclat.bpf.c, to
# see what each part of the program costs in the same rounds).  Start-up is
# exec to the line each tool prints once attached (through stdbuf: bpftrace
# prints its line before attaching, so its figure is low), STARTS runs each,
# alternating.
#
# Environment: ROUNDS (5), CALLS (200000), CPU (the last), TOOLS (floor
# ksight funclatency bpftrace), VARIANTS ("NAME=OBJECT ..."), STARTS (11; 0
# leaves start-up out), KSIGHT (./ksight), KSIGHT_BASE (another build, as
# the tool ksight-base), OUT (build/bench/funclat.json).
set -u
cd "$(dirname "$0")/.." || exit 1
. bench/lib.sh

ROUNDS=${ROUNDS:-5}
CALLS=${CALLS:-200000}
CPU=${CPU:-$(($(nproc) - 1))}
STARTS=${STARTS:-11}
KSIGHT=${KSIGHT:-./ksight}
OUT=${OUT:-$B/funclat.json}
WL=$(readlink -f build/workloads/fl_calls)
FN=fl_tiny_a
declare -A VOBJ=()
for v in ${VARIANTS:-}; do
	VOBJ[${v%%=*}]=${v#*=}
	[ -e "${v#*=}" ] || die "variant '${v%%=*}': no object '${v#*=}'"
done
TOOLS=${TOOLS:-floor ksight funclatency bpftrace}
[ -n "${KSIGHT_BASE:-}" ] && TOOLS="$TOOLS ksight-base"
TOOLS="$TOOLS ${!VOBJ[*]}"

[ "$(id -u)" = 0 ] || die "needs root (loads BPF programs, sets kernel.bpf_stats_enabled)"
for f in "$WL" "$B/funclat_load" "$B/bpf/funclat_floor.bpf.o" "$B/wall_stats" "$KSIGHT"; do
	[ -e "$f" ] || die "'$f' is missing; run 'make all bench-tools'"
done
for c in jq bpftool stdbuf taskset; do
	command -v "$c" >/dev/null || die "'$c' is missing; run 'make setup'"
done

TMP=$(mktemp -d /tmp/ksight-funclat.XXXXXX)
cleanup() {
	bench_stop_tracer
	[ -e "$TMP/ws.pid" ] && kill -INT "$(cat "$TMP/ws.pid")" 2>/dev/null
	bench_stats_restore
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

BT_PROG="uprobe:$WL:$FN { @s[tid] = nsecs; } uretprobe:$WL:$FN /@s[tid]/ { @h = hist(nsecs - @s[tid]); delete(@s[tid]); }"
tool_def() {
	READY=tracing
	READY_ON=err
	case $1 in
	floor)
		CMD=("$B/funclat_load" "$B/bpf/funclat_floor.bpf.o" "$WL" "$FN")
		DESC="empty uprobe + uretprobe (bench/funclat_floor.bpf.c)" ;;
	ksight)
		CMD=("$KSIGHT" funclat "$WL:$FN")
		DESC="ksight funclat $FN (uprobe + uretprobe, histogram)" ;;
	ksight-base)
		CMD=("$KSIGHT_BASE" funclat "$WL:$FN")
		DESC="$KSIGHT_BASE funclat $FN (another build, for a before/after in the same rounds)" ;;
	funclatency)
		READY=Tracing
		READY_ON=out
		CMD=(funclatency "$WL:$FN")
		DESC="libbpf-tools funclatency $FN" ;;
	bpftrace)
		READY=Attaching
		READY_ON=out
		ATTACHED=perf
		CMD=(bpftrace -e "$BT_PROG")
		DESC="bpftrace: $BT_PROG" ;;
	*)
		[ -n "${VOBJ[$1]:-}" ] || return 1
		CMD=("$B/funclat_load" "${VOBJ[$1]}" "$WL" "$FN")
		DESC="variant ${VOBJ[$1]} (bench/funclat_load)" ;;
	esac
}
loop() {
	taskset -c "$CPU" "$WL" "$CALLS" 0 tight | awk '$1 == "tight" { print $2 }'
}
seen() {
	echo -1
}

bench_usable_tools
echo "bench: tools $TOOLS x $ROUNDS rounds, $CALLS calls of $FN on cpu $CPU" >&2
bench_rounds 0
# statistics held on by an fd of our own: another user's bench that sets
# kernel.bpf_stats_enabled back to 0 in the middle of a round (which left
# one round of five, partly counted, in a run here) does not end them
"$B/wall_stats" 2>"$TMP/stats.log" &
WS=$!
echo "$WS" >"$TMP/ws.pid"
until grep -q enabled "$TMP/stats.log" 2>/dev/null; do
	kill -0 "$WS" 2>/dev/null || die "wall_stats did not start: $(cat "$TMP/stats.log")"
	sleep 0.05
done
bench_bpf_stats "$ROUNDS"
kill -INT "$WS"
wait "$WS"
rm -f "$TMP/ws.pid"

# start-up: exec to the ready line, the tools alternating; read as the
# line comes (stdbuf), timed by the shell's clock (no fork)
start_ms() {
	local t0 t1 line p
	tool_def "$1"
	t0=$EPOCHREALTIME
	exec 3< <(exec stdbuf -oL -eL "${CMD[@]}" 2>&1)
	p=$!
	while IFS= read -r line <&3; do
		[[ $line == *"$READY"* ]] && break
	done
	t1=$EPOCHREALTIME
	cat <&3 >/dev/null &
	exec 3<&-
	# again until it is gone: bpftrace ignores a SIGINT while it attaches
	while kill -INT "$p" 2>/dev/null; do sleep 0.1; done
	wait $!
	[[ $line == *"$READY"* ]] || return 1
	echo "${t0/./} ${t1/./}" | awk '{ printf "%.2f\n", ($2 - $1) / 1000 }'
}
: >"$TMP/starts"
for ((s = 0; s < STARTS; s++)); do
	for t in $TOOLS; do
		[ "$t" = floor ] || [ -n "${VOBJ[$t]:-}" ] && continue
		ms=$(start_ms "$t") || die "$t did not start"
		echo "$t $ms" >>"$TMP/starts"
	done
	# rotate, so no tool always follows the same one's teardown
	TOOLS="${TOOLS#* } ${TOOLS%% *}"
done
STARTUP=$(jq -nRc '[inputs | split(" ") | {t: .[0], ms: (.[1] | tonumber)}] | group_by(.t)
	| map({(.[0].t): ([.[].ms] | sort | if length % 2 == 1 then .[length / 2 | floor]
		else (.[length / 2 - 1] + .[length / 2]) / 2 end)}) | add // {}' "$TMP/starts")

WHAT="$CALLS calls of $FN (fl_calls tight), cpu $CPU"
EXTRA_JSON="{startup_ms: $STARTUP, floor_ns: ([.[] | select(.tool == \"floor\") | .bpf_stats.ns_per_op][0])}"
bench_summary "$CALLS"
echo
echo "start-up, exec to attached (ms, median of $STARTS): $STARTUP"
echo "bench: results in $OUT" >&2
