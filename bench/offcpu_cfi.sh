#!/bin/bash
# In-kernel cost of `offcpu --stacks` per context switch: user stacks by frame pointers against --call-graph cfi (tables walked in the kernel), on pingpong's switches.
#
# Usage: bash bench/offcpu_cfi.sh [ROUNDS [N]]   (root; make all first)
# Each round runs pingpong (two threads passing a byte over pipes N times each way, one CPU)
# under each mode in turn, order alternating, with kernel.bpf_stats_enabled on (restored after),
# and reads the sched_switch program's run_time_ns / run_cnt.  The whole program is counted:
# the switch-in bookkeeping and the kernel stack too, the same in both modes; the difference is
# the user stack.  Prints each mode's median ns per switch and the walks' depth from -v.
set -u
cd "$(dirname "$0")/.." || exit 1
ROUNDS=${1:-5}
N=${2:-20000}
K=./ksight
W=build/workloads/pingpong
TMP=$(mktemp -d /tmp/ksight-bench-offcpu.XXXXXX)
old=$(sysctl -n kernel.bpf_stats_enabled)
trap 'sysctl -qw kernel.bpf_stats_enabled=$old; rm -rf "$TMP"' EXIT
sysctl -qw kernel.bpf_stats_enabled=1

one() { # MODE ROUND: ns per switch of this run
	"$W" -n "$N" -c 0 -b -g > "$TMP/pp.out" 2>&1 &
	local pp=$! i=0
	while ! grep -q . "$TMP/pp.out" && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	"$K" offcpu --stacks --call-graph "$1" -p "$pp" -v -o /dev/null 2> "$TMP/k.$1.$2" &
	local k=$!
	i=0
	while ! grep -q tracing "$TMP/k.$1.$2" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	local id
	# this ksight's program: its fds name their prog ids (bpftool's pids field needs its pid iterator)
	for id in $(cat /proc/"$k"/fdinfo/* 2>/dev/null | awk '/^prog_id:/ { print $2 }' | sort -u); do
		[ "$(bpftool prog show id "$id" -j | jq -r .name)" = on_switch ] && break
	done
	kill -USR1 "$pp"
	i=0
	while ! grep -q '^done' "$TMP/pp.out" && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
	bpftool prog show id "$id" -j | jq -r '"\(.run_time_ns) \(.run_cnt)"' > "$TMP/s.$1.$2"
	kill -USR1 "$pp"
	wait "$pp"
	wait "$k"
	awk '{ printf "%.1f\n", $2 ? $1 / $2 : 0 }' "$TMP/s.$1.$2"
}

for r in $(seq 1 "$ROUNDS"); do
	if [ $((r % 2)) = 1 ]; then order="fp cfi"; else order="cfi fp"; fi
	for m in $order; do
		echo "$m $(one "$m" "$r")" >> "$TMP/all"
	done
done
for m in fp cfi; do
	awk -v m="$m" '$1 == m { print $2 }' "$TMP/all" | sort -n |
		awk -v m="$m" '{ a[NR] = $1 } END { printf "%-4s %8.1f ns per switch (median of %d; %s to %s)\n", m, a[int((NR + 1) / 2)], NR, a[1], a[NR] }'
done
grep -h "cfi:.*walks" "$TMP"/k.cfi.* | tail -1
