#!/bin/bash
# Benchmark of `ksight serve`: steady-state CPU and RSS with every collector on under a syscall-heavy load, and scrape latency and size at ~10,000 series.
#
# Part 1: ksight serve with all six collectors (drain period PERIOD, default 1 s) while
# `dd bs=1` copies DD_BYTES bytes (two syscalls per byte, ~1-2 M/s), scraped every SCRAPE
# seconds (15) like a Prometheus; CPU is ksight's own user+system time over the window
# (percent of one core; the BPF programs' time is charged to the traced tasks, shown apart
# when kernel.bpf_stats_enabled is on), RSS is VmRSS at the end and VmHWM.
# Part 2: ksight serve --collectors mem with KIDS short-lived processes of distinct names
# (11 counter series each), then SCRAPES scrapes per format: median time and bytes.
# Part 3 (a series sweep, SWEEP="1000 10000 50000" series): for each size, KSIGHT and, when
# BEFORE names another binary (e.g. main's, built in a temp dir), that one watch the same
# namefork cgroup side by side, so both hold the same series; their scrapes alternate round by
# round (median of SCRAPES each): text and protobuf ms, RSS over an idle serve per series, peak.
# Environment: DUR (30), PERIOD (1), SCRAPE (15), KIDS (1000), SCRAPES (21), KSIGHT (./ksight),
# PARTS ("1 2 3"), SWEEP, BEFORE.
set -u
cd "$(dirname "$0")/.." || exit 1
DUR=${DUR:-30}
PERIOD=${PERIOD:-1}
SCRAPE=${SCRAPE:-15}
KIDS=${KIDS:-1000}
SCRAPES=${SCRAPES:-21}
KSIGHT=${KSIGHT:-./ksight}
PARTS=${PARTS:-1 2 3}
SWEEP=${SWEEP:-1000 10000 50000}
BEFORE=${BEFORE:-}
T=$(mktemp -d /tmp/ksight-bench-serve.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT

start_serve() {
	"${BIN:-$KSIGHT}" serve --listen 127.0.0.1:0 "$@" 2>"$T/s.err" &
	S_PID=$!
	for _ in $(seq 1 200); do
		grep -q "listening on" "$T/s.err" 2>/dev/null && break
		sleep 0.05
	done
	URL=$(sed -n 's|.*listening on \(http://[^ ]*\)|\1|p' "$T/s.err")
	[ -n "$URL" ] || { echo "serve did not start: $(cat "$T/s.err")" >&2; exit 1; }
}
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

part() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }

# Part 1
if part 1; then
start_serve -i "$PERIOD"
sleep 2
dd if=/dev/zero of=/dev/null bs=1 count=${DD_BYTES:-100000000000} 2>/dev/null &
DD=$!
t0=$(date +%s.%N)
c0=$(cpu_ticks $S_PID)
end=$(($(date +%s) + DUR))
while [ "$(date +%s)" -lt $end ]; do
	curl -s -o /dev/null "$URL"
	sleep "$SCRAPE" &
	wait $! 2>/dev/null
	[ "$(date +%s)" -ge $end ] && break
done
c1=$(cpu_ticks $S_PID)
t1=$(date +%s.%N)
dd_calls=$(awk '/^syscr|^syscw/ { s += $2 } END { print s }' /proc/$DD/io 2>/dev/null)
kill $DD
curl -s "$URL" >"$T/m1.txt"
rss=$(awk '/^VmRSS/ { print $2 }' /proc/$S_PID/status)
hwm=$(awk '/^VmHWM/ { print $2 }' /proc/$S_PID/status)
kill -TERM $S_PID
wait $S_PID 2>/dev/null
hz=$(getconf CLK_TCK)
awk -v c="$((c1 - c0))" -v hz="$hz" -v t0="$t0" -v t1="$t1" -v rss="$rss" -v hwm="$hwm" -v calls="${dd_calls:-0}" \
	-v p="$PERIOD" -v s="$SCRAPE" 'BEGIN {
	w = t1 - t0
	printf "all six collectors, drain every %ss, scrape every %ss, %.0f s under dd bs=1 (%.2f M syscalls/s):\n", p, s, w, calls / w / 1e6
	printf "  ksight CPU %.2f%% of one core; RSS %.1f MiB (peak %.1f MiB)\n", c / hz / w * 100, rss / 1024, hwm / 1024
}'
if grep -q '^ksight_bpf_stats_enabled 1' "$T/m1.txt"; then
	awk '/^ksight_bpf_prog_run_seconds_total/ { s += $2 } /^ksight_bpf_prog_runs_total/ { n += $2 }
	     END { printf "  in-kernel: %.3f s in %d program runs (%.0f ns per run)\n", s, n, n ? s / n * 1e9 : 0 }' "$T/m1.txt"
fi

fi

# Part 2
cg2=$(awk '$3=="cgroup2" {print $2; exit}' /proc/mounts)
make -s build/workloads/namefork >/dev/null
if part 2; then
cg2=$(awk '$3=="cgroup2" {print $2; exit}' /proc/mounts)
cg=$cg2/ksight-bench-serve-$$
mkdir -p "$cg"
make -s build/workloads/namefork >/dev/null
build/workloads/namefork "$KIDS" 4 bench >"$T/nf.out" &
NF=$!
until grep -q '^[0-9]' "$T/nf.out" 2>/dev/null; do sleep 0.05; done
echo $NF >"$cg/cgroup.procs"
start_serve --collectors mem -c "$cg" --max-series $((KIDS * 2))
kill -USR1 $NF
wait $NF
sleep 2
curl -s "$URL" >"$T/m2.txt"
series=$(grep -vc '^#' "$T/m2.txt")
echo "scrapes at $series series (mem, $KIDS names), median of $SCRAPES:"
for fmt in text openmetrics protobuf; do
	for _ in $(seq 1 "$SCRAPES"); do
		curl -s -o /dev/null -w '%{time_total} %{size_download}\n' "$URL?format=$fmt"
	done >"$T/$fmt.times"
	printf "  %-12s %6.1f ms  %8d bytes\n" "$fmt" "$(cut -d' ' -f1 "$T/$fmt.times" | median | awk '{ print $1 * 1000 }')" \
		"$(cut -d' ' -f2 "$T/$fmt.times" | median)"
done
grep '^ksight_scrape_duration_seconds' <(curl -s "$URL") | sed 's/^/  server-side render of the previous scrape: /'
kill -TERM $S_PID
wait $S_PID 2>/dev/null
rmdir "$cg" 2>/dev/null
fi

# Part 3
series_of() { curl -s "$1?format=text" | grep -vc '^#'; }
kib() { awk -v k="$2" '$1 == k":" { print $2 }' "/proc/$1/status"; }
if part 3; then
	bins=("$KSIGHT")
	[ -n "$BEFORE" ] && bins=("$BEFORE" "$KSIGHT")
	echo "series sweep (mem, 10 series a name; text/protobuf scrape ms, median of $SCRAPES alternating rounds):"
	for want in $SWEEP; do
		kids=$(((want + 9) / 10))
		cg=$cg2/ksight-bench-sweep-$$-$want
		mkdir -p "$cg"
		build/workloads/namefork "$kids" 1 sw >"$T/nf.out" &
		NF=$!
		until grep -q '^[0-9]' "$T/nf.out" 2>/dev/null; do sleep 0.05; done
		echo $NF >"$cg/cgroup.procs"
		pids=() urls=() base=()
		for b in "${bins[@]}"; do
			BIN=$b start_serve --collectors mem -c "$cg" --max-series $((kids * 2)) -i "$PERIOD"
			pids+=("$S_PID") urls+=("$URL")
		done
		# the idle serve's own memory, once its first snapshot is up
		for i in "${!pids[@]}"; do
			until curl -sf -o /dev/null "${urls[$i]%/metrics}/healthz"; do sleep 0.05; done
			base+=("$(kib "${pids[$i]}" VmRSS)")
		done
		kill -USR1 $NF
		wait $NF
		# every name in, as a drain after the last child shows it (counted twice the same)
		for u in "${urls[@]}"; do
			prev=-1
			while :; do
				n=$(series_of "$u")
				[ "$n" = "$prev" ] && [ "$n" -ge "$kids" ] && break
				prev=$n
				sleep "$PERIOD"
			done
		done
		for fmt in text protobuf; do
			for _ in $(seq 1 "$SCRAPES"); do
				for i in "${!urls[@]}"; do
					curl -s -o /dev/null -w '%{time_total}\n' "${urls[$i]}?format=$fmt" >>"$T/sw.$i.$fmt"
				done
			done
		done
		for i in "${!pids[@]}"; do
			n=$(series_of "${urls[$i]}")
			rss=$(kib "${pids[$i]}" VmRSS)
			hwm=$(kib "${pids[$i]}" VmHWM)
			printf "  %-28s %6d series: text %6.1f ms, protobuf %6.1f ms; RSS %6.1f MiB (%5.0f B a series over idle %.1f MiB), peak %6.1f MiB\n" \
				"${bins[$i]}" "$n" "$(median <"$T/sw.$i.text" | awk '{ print $1 * 1000 }')" \
				"$(median <"$T/sw.$i.protobuf" | awk '{ print $1 * 1000 }')" "$(echo "$rss / 1024" | bc -l)" \
				"$(echo "($rss - ${base[$i]}) * 1024 / $n" | bc -l)" "$(echo "${base[$i]} / 1024" | bc -l)" "$(echo "$hwm / 1024" | bc -l)"
			rm -f "$T/sw.$i.text" "$T/sw.$i.protobuf"
			kill -TERM "${pids[$i]}"
			wait "${pids[$i]}" 2>/dev/null
		done
		rmdir "$cg" 2>/dev/null
	done
fi
