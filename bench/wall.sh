#!/bin/bash
# In-kernel cost of `ksight wall` per context switch against libbpf-tools runqlat and offcputime run together (what it replaces, with offcpu's
# split), on a same-CPU pipe ping-pong: each program's mean run time (BPF run-time statistics) times its events per round trip (2 wakeups,
# 2 switches, 4 system calls), over an empty-program floor (bench/sched_floor), in alternating rounds; medians.
# Usage: bench/wall.sh [REPS] [ROUNDS]
cd "$(dirname "$0")/.." || exit 1
REPS=${1:-6}
ROUNDS=${2:-20000}
B=build/bench
KS=${KSIGHT_BIN:-./ksight}
CPU=$(($(getconf _NPROCESSORS_ONLN) - 1))
TMP=$(mktemp -d)
PIDS=
trap 'for p in $PIDS $STATS_PID; do kill $p 2>/dev/null; done; rm -rf "$TMP"' EXIT

[ "$(id -u)" = 0 ] || { echo "bench: needs root" >&2; exit 1; }
command -v runqlat >/dev/null && command -v offcputime >/dev/null || { echo "bench: needs libbpf-tools runqlat and offcputime" >&2; exit 1; }
make -s ksight build/workloads/pingpong "$B/sched_floor" "$B/wall_stats" || exit 1

# waits until LOG says WORD (15 s at most)
ready() {
	for _ in $(seq 1 300); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	echo "bench: no '$2' in $1: $(head -2 "$1")" >&2
	return 1
}

$B/wall_stats 2>"$TMP/stats.log" &
STATS_PID=$!
ready "$TMP/stats.log" enabled || exit 1

# start CONFIG: its tracers in the background (PIDS), once they trace; their programs are those
# loaded since (MIN_ID) named as theirs (RE): bpftool here cannot say which process holds one
start() {
	PIDS=
	MIN_ID=$(bpftool -j prog show | jq '[.[].id] | max // 0')
	case $1 in
	floor) RE='^floor_' ;;
	wall) RE='^(sched_|sys_).*__(tp_btf|raw_tp)$' ;;
	pair) RE='^(sched_switch|sched_wakeup|sched_wakeup_new)$' ;;
	esac
	case $1 in
	floor) $B/sched_floor 2>"$TMP/f.log" & PIDS=$!; ready "$TMP/f.log" attached ;;
	wall) $KS wall >/dev/null 2>"$TMP/w.log" & PIDS=$!; ready "$TMP/w.log" tracing ;;
	pair)
		# libbpf-tools print nothing when attached: their programs are listed once loaded
		runqlat >/dev/null 2>&1 & PIDS=$!
		offcputime >/dev/null 2>&1 & PIDS="$PIDS $!"
		for _ in $(seq 1 300); do
			[ "$(progs | wc -l)" -ge 4 ] && break
			sleep 0.05
		done ;;
	esac
	sleep 0.3
}

stop() {
	for p in $PIDS; do kill -INT $p 2>/dev/null; done
	for p in $PIDS; do
		for _ in $(seq 1 50); do kill -0 $p 2>/dev/null || break; sleep 0.1; done
		kill -KILL $p 2>/dev/null
		wait $p 2>/dev/null
	done
	PIDS=
}

# "id name run_time_ns run_cnt" of the running tracers' programs
progs() {
	bpftool -j prog show | jq -r --argjson min "$MIN_ID" --arg re "$RE" \
		'.[] | select(.id > $min and (.name // "" | test($re))) | "\(.id) \(.name) \(.run_time_ns // 0) \(.run_cnt // 0)"'
}

# ns per round trip: each program's mean over the ping-pong times its events per round trip
price() {
	awk 'NR == FNR { t[$1] = $3; c[$1] = $4; next }
		{ dc = $4 - c[$1]; if (dc <= 0) next; m = ($3 - t[$1]) / dc
		  n = $2 ~ /wakeup_new|process_exit/ ? 0 : $2 ~ /switch/ ? 2 : $2 ~ /wakeup/ ? 2 : $2 ~ /sys_(enter|exit)/ ? 4 : 0
		  s += n * m }
		END { printf "%.0f\n", s }' "$1" "$2"
}

for rep in $(seq 1 "$REPS"); do
	for c in floor wall pair; do
		start $c || { stop; continue; }
		progs >"$TMP/before"
		build/workloads/pingpong -n "$ROUNDS" -c $CPU >/dev/null
		progs >"$TMP/after"
		price "$TMP/before" "$TMP/after" >>"$TMP/st.$c"
		stop
	done
done

median() { sort -n | awk '{a[NR] = $1} END { if (NR) print a[int((NR + 1) / 2)]; else print "" }'; }
f=$(median <"$TMP/st.floor") w=$(median <"$TMP/st.wall") p=$(median <"$TMP/st.pair")
echo "in-kernel ns per round trip (2 wakeups, 2 switches, 4 system calls), medians of $REPS alternating rounds of $ROUNDS:"
for c in floor wall pair; do printf "  %-6s %6s   (%s)\n" $c "$(median <"$TMP/st.$c")" "$(sort -n "$TMP/st.$c" | tr '\n' ' ')"; done
awk -v w="$w" -v p="$p" -v f="$f" 'BEGIN { if (p > f) printf "per context switch: wall %d ns, runqlat+offcputime %d ns; over the floor (%d): %.2f of theirs (target <= 0.5)\n", w / 2, p / 2, f / 2, (w - f) / (p - f) }'
