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
# Environment: DUR (30), PERIOD (1), SCRAPE (15), KIDS (1000), SCRAPES (21), KSIGHT (./ksight).
set -u
cd "$(dirname "$0")/.." || exit 1
DUR=${DUR:-30}
PERIOD=${PERIOD:-1}
SCRAPE=${SCRAPE:-15}
KIDS=${KIDS:-1000}
SCRAPES=${SCRAPES:-21}
KSIGHT=${KSIGHT:-./ksight}
T=$(mktemp -d /tmp/ksight-bench-serve.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT

start_serve() {
	"$KSIGHT" serve --listen 127.0.0.1:0 "$@" 2>"$T/s.err" &
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

# Part 1
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

# Part 2
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
