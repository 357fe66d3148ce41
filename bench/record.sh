#!/bin/bash
# Benchmark: `ksight record` (per-CPU and shared rings) against `perf record -e` on raw_syscalls:sys_enter, same workload, same run.
#
# Per tool and round: the getppid_loop workload (REPS x CALLS raw getppid on CPU 0, pinned) runs
# traced; reported are the workload's added ns per call (the producer's cost, in the kernel),
# the tracer's own CPU (user+sys, from /usr/bin/time) per recorded event, events lost, file
# bytes per event, and the reader's speed (ksight report vs perf script) in events per second.
# Medians over ROUNDS rounds (tools interleaved, so drift hits all alike).  Root; run from the repo.
set -u
ROUNDS=${ROUNDS:-3}
CALLS=${CALLS:-200000}
REPS=${REPS:-5}
KSIGHT=${KSIGHT:-./ksight}
LOOP=build/bench/getppid_loop
TMP=$(mktemp -d /tmp/ksight-bench-record.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

mkdir -p build/bench
[ -x "$LOOP" ] && [ "$LOOP" -nt bench/getppid_loop.c ] ||
	cc -O2 -Wall -Wextra -Werror -D_GNU_SOURCE -o "$LOOP" bench/getppid_loop.c || exit 1
command -v perf >/dev/null || { echo "bench: perf is needed" >&2; exit 1; }

ns_per_call() { sed -n 's/.*ns_per_call median=\([0-9.]*\).*/\1/p' "$1"; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# One round of tool $1; appends "ns cpu_ns_per_event lost bytes_per_event read_events_per_s" to $TMP/$1
round() {
	local t=$1 f="$TMP/$1.data" err="$TMP/$1.err" recorded lost bytes rd0 rd1 cpu
	rm -f "$f"
	case $t in
	none)
		"$LOOP" -n "$CALLS" -r "$REPS" -c 0 >"$TMP/w.out" 2>/dev/null
		echo "$(ns_per_call "$TMP/w.out") 0 0 0 0" >>"$TMP/$t"
		return ;;
	ksight-percpu|ksight-shared)
		local ring=per-cpu
		[ "$t" = ksight-shared ] && ring=shared
		/usr/bin/time -f "%U %S" -o "$TMP/time" "$KSIGHT" record -e raw_syscalls:sys_enter --comm getppid_loop \
			--ring "$ring" -b 16M -o "$f" 2>"$err" &
		local kp=$!
		while ! grep -q tracing "$err" 2>/dev/null; do sleep 0.05; done
		"$LOOP" -n "$CALLS" -r "$REPS" -c 0 >"$TMP/w.out" 2>/dev/null
		kill -INT "$(pgrep -P $kp)" 2>/dev/null || kill -INT $kp
		wait $kp
		recorded=$("$KSIGHT" info -j "$f" | jq -r .trailer.recorded)
		lost=$("$KSIGHT" info -j "$f" | jq -r .trailer.lost)
		rd0=$(date +%s.%N)
		"$KSIGHT" report "$f" >/dev/null
		rd1=$(date +%s.%N) ;;
	perf)
		/usr/bin/time -f "%U %S" -o "$TMP/time" perf record -q -e raw_syscalls:sys_enter -m 4096 -o "$f" -- \
			"$LOOP" -n "$CALLS" -r "$REPS" -c 0 >"$TMP/w.out" 2>"$err"
		recorded=$(perf script -i "$f" -F event 2>/dev/null | wc -l)
		lost=$(perf report -i "$f" --stats 2>/dev/null | awk '/LOST_SAMPLES|LOST /{ s += $NF } END { print s + 0 }')
		rd0=$(date +%s.%N)
		perf script -i "$f" >/dev/null 2>&1
		rd1=$(date +%s.%N) ;;
	esac
	bytes=$(stat -c %s "$f")
	cpu=$(awk '{ print ($1 + $2) * 1e9 }' "$TMP/time")
	echo "$(ns_per_call "$TMP/w.out") $(awk -v c="$cpu" -v n="$recorded" 'BEGIN { printf "%.0f", n ? c / n : 0 }') $lost" \
		"$(awk -v b="$bytes" -v n="$recorded" 'BEGIN { printf "%.1f", n ? b / n : 0 }')" \
		"$(awk -v n="$recorded" -v a="$rd0" -v b="$rd1" 'BEGIN { printf "%.0f", n / (b - a) }')" >>"$TMP/$t"
}

TOOLS="none ksight-percpu ksight-shared perf"
for r in $(seq "$ROUNDS"); do
	for t in $TOOLS; do round "$t"; done
done
base=$(awk '{ print $1 }' "$TMP/none" | median)
printf "%-15s %12s %14s %14s %10s %14s %16s\n" tool "ns/call" "added ns/call" "tracer ns/ev" lost "bytes/event" "read events/s"
for t in $TOOLS; do
	ns=$(awk '{ print $1 }' "$TMP/$t" | median)
	printf "%-15s %12s %14s %14s %10s %14s %16s\n" "$t" "$ns" "$(awk -v a="$ns" -v b="$base" 'BEGIN { printf "%.1f", a - b }')" \
		"$(awk '{ print $2 }' "$TMP/$t" | median)" "$(awk '{ print $3 }' "$TMP/$t" | median)" \
		"$(awk '{ print $4 }' "$TMP/$t" | median)" "$(awk '{ print $5 }' "$TMP/$t" | median)"
done
echo "(medians of $ROUNDS rounds; $REPS x $CALLS getppid per round on CPU 0; $(nproc) CPUs)"
