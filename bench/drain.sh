#!/bin/bash
# Cost of draining the row maps: the shared drain alone (build/bench/drain: batch operations against a key at a time), then end to end in serve.
#
# Part 1: build/bench/drain times ks_hash_drain_half on a map of N rows in
# the drained half and N in the other, for each N of ROWS, on a shared map
# (tcp's row, no preallocation) and a per-CPU one (mem's faults): medians
# of ROUNDS alternating rounds and the median per-round ratio.
# Part 2: for each ksight build of VARIANTS ("NAME=PATH ..."), in
# alternating order for ROUNDS rounds: `ksight syscalls --by BY -i PERIOD`
# on CPU 0 while KIDS short-lived processes of distinct names
# (tests/workloads/namefork, on CPU 1) each make a few syscalls: ksight's
# own CPU time (schedstat) from one interval after it attached to two
# intervals after the churn ended, i.e. draining and reporting KIDS rows
# (and a few idle intervals, the same in every build).  Not serve: its
# drain time also holds the snapshot of every series it accumulated.
# Environment: ROWS ("1000 10000"), ROUNDS (7), KIDS (2000), PERIOD (1),
# BY (comm), VARIANTS ("new=./ksight"), PART (both; 1 or 2: only that one).
set -u
cd "$(dirname "$0")/.." || exit 1
ROWS=${ROWS:-"1000 10000"}
ROUNDS=${ROUNDS:-7}
KIDS=${KIDS:-2000}
PERIOD=${PERIOD:-1}
BY=${BY:-comm}
VARIANTS=${VARIANTS:-"new=./ksight"}
PART=${PART:-}
T=$(mktemp -d /tmp/ksight-bench-drain.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT

[ "$(id -u)" = 0 ] || { echo "bench: needs root (BPF maps)" >&2; exit 1; }
make -s build/bench/drain build/workloads/namefork >/dev/null || exit 1
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

if [ "$PART" != 2 ]; then
	for n in $ROWS; do
		build/bench/drain --rows "$n" --rounds "$ROUNDS"
		build/bench/drain --rows "$n" --rounds "$ROUNDS" --percpu
	done
fi
[ "$PART" = 1 ] && exit 0

# one round of one build: prints ksight's CPU time (ms) from attached to two intervals after the churn
churn_cost() {
	local ksight=$1 k_pid nf c0 c1
	taskset -c 1 build/workloads/namefork "$KIDS" 1 dr >"$T/nf.out" &
	nf=$!
	until grep -q '^[0-9]' "$T/nf.out" 2>/dev/null; do sleep 0.05; done
	taskset -c 0 "$ksight" syscalls --by "$BY" -i "$PERIOD" -j >/dev/null 2>"$T/k.err" &
	k_pid=$!
	until grep -q tracing "$T/k.err" 2>/dev/null; do sleep 0.05; done
	sleep "$PERIOD"
	c0=$(awk '{ print $1 }' "/proc/$k_pid/schedstat")
	kill -USR1 $nf
	until grep -q '^done' "$T/nf.out"; do sleep 0.1; done
	sleep $((2 * PERIOD))
	c1=$(awk '{ print $1 }' "/proc/$k_pid/schedstat")
	kill -INT $k_pid
	wait $k_pid 2>/dev/null
	wait $nf 2>/dev/null
	awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.1f\n", (b - a) / 1e6 }'
}

names=()
paths=()
for v in $VARIANTS; do
	names+=("${v%%=*}")
	paths+=("${v#*=}")
done
nv=${#names[@]}
for r in $(seq 1 "$ROUNDS"); do
	for i in $(seq 0 $((nv - 1))); do
		j=$(((i + r) % nv)) # alternating which goes first
		c=$(churn_cost "${paths[$j]}")
		echo "${names[$j]} $r $c" >>"$T/cost.txt"
	done
done
echo "syscalls --by $BY -i $PERIOD, $KIDS processes of distinct names, $ROUNDS rounds, ksight's CPU time:"
for n in "${names[@]}"; do
	m=$(awk -v n="$n" '$1 == n { print $3 }' "$T/cost.txt" | median)
	echo "  $n: ${m} ms (median; rounds: $(awk -v n="$n" '$1 == n { printf "%s ", $3 }' "$T/cost.txt"))"
done
if [ "$nv" -ge 2 ]; then
	# per-round ratio of each build to the first
	for n in "${names[@]:1}"; do
		awk -v a="${names[0]}" -v b="$n" '$1 == a { x[$2] = $3 } $1 == b { y[$2] = $3 }
			END { for (r in x) if (x[r] > 0 && (r in y)) print y[r] / x[r] }' "$T/cost.txt" | median |
			xargs printf "  %s/%s: %s (median per-round ratio)\n" "$n" "${names[0]}"
	done
fi
