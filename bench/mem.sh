#!/bin/bash
# In-kernel cost of counting user page faults: ns per exceptions:page_fault_user event of ksight mem (this build, and OLD=path
# for another build), beside a bpftrace one-liner counting the same tracepoint by pid, from kernel.bpf_stats_enabled.
# Usage: bench/mem.sh [ROUNDS] [PAGES]: ROUNDS alternating rounds, each tool traces memload touching PAGES pages 5 times;
# prints the median ns per event of each tool's page_fault_user program.  BY=comm|cgroup measures another --by mode.
cd "$(dirname "$0")/.." || exit 1
ROUNDS=${1:-5}
PAGES=${2:-20000}
BY=${BY:-pid}
TMP=$(mktemp -d)
stats0=$(cat /proc/sys/kernel/bpf_stats_enabled)
trap 'echo "$stats0" >/proc/sys/kernel/bpf_stats_enabled; [ -n "$T_PID" ] && kill -INT "$T_PID" 2>/dev/null; rm -rf "$TMP"' EXIT

[ "$(id -u)" = 0 ] || { echo "bench: needs root" >&2; exit 1; }
make -s all || exit 1
TOOLS="ksight"
[ -n "$OLD" ] && TOOLS="$TOOLS old"
command -v bpftrace >/dev/null && TOOLS="$TOOLS bpftrace"
echo 1 >/proc/sys/kernel/bpf_stats_enabled

# start NAME: starts the tracer in the background (T_PID), waits until it traces
start() {
	local log=$TMP/$1.log ready
	: >"$log"
	case $1 in
	ksight) ./ksight mem --by "$BY" >/dev/null 2>"$log" & T_PID=$! ready=tracing ;;
	old) "$OLD" mem --by "$BY" >/dev/null 2>"$log" & T_PID=$! ready=tracing ;;
	bpftrace) bpftrace -e 'tracepoint:exceptions:page_fault_user { @[pid] = count(); }' >"$log" 2>&1 &
		T_PID=$! ready=Attaching ;;
	esac
	for _ in $(seq 1 600); do
		grep -q "$ready" "$log" && { sleep 0.5; return 0; }
		sleep 0.05
	done
	echo "bench: $1 did not start: $(head -3 "$log")" >&2
	return 1
}

# run_time_ns and run_cnt summed over the tracer's page_fault_user programs
stats() {
	local ids
	ids=$(cat /proc/"$T_PID"/fdinfo/* 2>/dev/null | awk '$1 == "prog_id:" { print $2 }' | sort -un | paste -sd,)
	bpftool -j prog show | jq -r --argjson ids "[$ids]" \
		'[.[] | select(.id as $i | $ids | index($i)) | select((.name // "") | test("fault_user|page_fault_user|^tracepoint"))] |
		 "\(map(.run_time_ns // 0) | add // 0) \(map(.run_cnt // 0) | add // 0)"'
}

for r in $(seq 1 "$ROUNDS"); do
	for t in $TOOLS; do
		start "$t" || continue
		read -r ns0 n0 < <(stats)
		build/workloads/memload -n "$PAGES" -l 5 >/dev/null
		read -r ns1 n1 < <(stats)
		kill -INT "$T_PID"
		wait "$T_PID" 2>/dev/null
		T_PID=""
		echo "$t $(( (ns1 - ns0) / (n1 - n0 > 0 ? n1 - n0 : 1) )) $((n1 - n0))" >>"$TMP/results"
	done
done
echo "ns per page_fault_user event (median of $ROUNDS rounds, $((PAGES * 5)) faults each; --by $BY):"
for t in $TOOLS; do
	awk -v t="$t" '$1 == t { print $2 }' "$TMP/results" | sort -n |
		awk -v t="$t" '{ a[NR] = $1 } END { if (NR) printf "  %-9s %5d ns  (rounds: %d, min %d, max %d)\n", t, a[int((NR + 1) / 2)], NR, a[1], a[NR] }'
done
