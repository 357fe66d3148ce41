#!/bin/bash
# Benchmark: `ksight record` against `perf record` and `trace-cmd record` on raw_syscalls:sys_enter/sys_exit of a 2-thread getppid storm (-p), at a sweep of rates, same run.
#
# Per round, tool and rate: build/bench/storm (2 threads, RATES in events/s, enter + exit per
# call, or flat out: "max") waits on a fifo until the tracer is attached, runs SECS seconds and
# says how many calls it made: the independent count (produced = 2 x calls).  Recorded is what
# the tool's file holds (`NR 110` lines of ksight report, perf script, trace-cmd report), lost =
# produced - recorded.  The tracer runs alone in a cgroup of its own (cpuacct, or v2 cpu.stat):
# its CPU per recorded event is the cgroup's usage from attached (start-up apart) to its exit.
# ksight's in-kernel time comes from bpf_stats (ks_record's run time over the same window, per
# recorded event: other tasks' filtered-out runs included, as its cost; and per run).  Flat out
# ("max", bpf_stats off), the storm's own CPU per call (thread CPU clock) minus the untraced one is
# the time each tracer adds to a getppid.  KSIGHT_OLD=binary adds a second ksight (before/after a change) to the same rounds.
# Medians over ROUNDS rounds, tools interleaved.  Root; run from the repo.
set -u
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-1}
RATES=${RATES:-"25000 100000 400000 max"}
BUF=${BUF:-1M}
KSIGHT=${KSIGHT:-./ksight}
KSIGHT_OLD=${KSIGHT_OLD:-}
TOOLS=${TOOLS:-"none ksight ${KSIGHT_OLD:+ksight-old} perf trace-cmd"}
STORM=build/bench/storm
TMP=$(mktemp -d /tmp/ksight-bench-record.XXXXXX)
SAVED=$(cat /proc/sys/kernel/bpf_stats_enabled)
CG=
trap 'echo "$SAVED" >/proc/sys/kernel/bpf_stats_enabled; [ -n "$CG" ] && rmdir "$CG" 2>/dev/null; rm -rf "$TMP"' EXIT

mkdir -p build/bench
[ -x "$STORM" ] && [ "$STORM" -nt bench/storm.c ] ||
	cc -O2 -Wall -Wextra -Werror -D_GNU_SOURCE -pthread -o "$STORM" bench/storm.c || exit 1
for t in $TOOLS; do
	case $t in
	perf | trace-cmd) command -v "$t" >/dev/null || { echo "bench: $t is needed (scripts/setup.sh)" >&2; exit 1; } ;;
	esac
done

# The tracer's cgroup: v1 cpuacct (usage in ns) or v2 (cpu.stat usage_usec)
if [ -d /sys/fs/cgroup/cpuacct ]; then
	CG=/sys/fs/cgroup/cpuacct/ksight-bench-record.$$
	cg_ns() { cat "$CG/cpuacct.usage"; }
else
	CG=/sys/fs/cgroup/ksight-bench-record.$$
	cg_ns() { awk '$1 == "usage_usec" { print $2 * 1000 }' "$CG/cpu.stat"; }
fi
mkdir "$CG" || exit 1

# trace-cmd on this kernel: no function tracer, so ftrace_enabled and the set_ftrace_* files
# refuse writes (EPERM) and trace-cmd stops; in a private mount namespace they are shadowed by
# writable files, and the event pid filter (set_event_pid) does the work.  /proc/kallsyms is
# shadowed by a copy: trace-cmd reads it twice and gives up when its size changed in between
# (a BPF program loaded or unloaded elsewhere), and the syscall events need no symbol
cat >"$TMP/tc.sh" <<'EOF'
#!/bin/sh
D=$1
shift
echo 1 >"$D/one"
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing || exit 1
mount --bind "$D/one" /proc/sys/kernel/ftrace_enabled
cat /proc/kallsyms >"$D/kallsyms" && mount --bind "$D/kallsyms" /proc/kallsyms
for f in set_ftrace_pid set_ftrace_notrace_pid set_ftrace_filter set_ftrace_notrace set_graph_function set_graph_notrace; do
	[ -e "/sys/kernel/tracing/$f" ] && : >"$D/$f" && mount --bind "$D/$f" "/sys/kernel/tracing/$f"
done
exec trace-cmd "$@"
EOF
chmod +x "$TMP/tc.sh"

prog_stats() { # PID: "run_cnt run_time_ns" of the ks_record program it holds
	local id
	id=$(awk '/^prog_id:/ { print $2 }' /proc/"$1"/fdinfo/* 2>/dev/null | sort -u |
		while read -r i; do bpftool -j prog show id "$i" 2>/dev/null; done |
		jq -r 'select(.name == "ks_record") | .id' | head -n 1)
	[ -n "$id" ] && bpftool -j prog show id "$id" | jq -r '"\(.run_cnt // 0) \(.run_time_ns // 0)"' || echo "0 0"
}

# One round of tool $1 at rate $2; appends "rate produced recorded lost cpu_ns_per_event storm_cpu_ns_per_call bpf_ns_per_event bpf_ns_per_run" to $TMP/$1
round() {
	local t=$1 rate=$2 f="$TMP/$1.data" err="$TMP/$1.err" go="$TMP/go" sp tp kp c0=0 t0=0 c1=0 t1=0 u0 u1 recorded calls r=$2
	[ "$rate" = max ] && r=0
	rm -rf "$f" "$f".* "$go" "$err"
	mkfifo "$go"
	"$STORM" -t 2 -r $((r / 2)) -d "$SECS" <"$go" >"$TMP/storm.out" &
	sp=$!
	case $t in
	none) ;;
	ksight | ksight-old)
		local bin=$KSIGHT
		[ "$t" = ksight-old ] && bin=$KSIGHT_OLD
		sh -c 'echo $$ >"$1/cgroup.procs"; shift; exec "$@"' sh "$CG" "$bin" record -e raw_syscalls:sys_enter \
			-e raw_syscalls:sys_exit -p "$sp" -b "$BUF" -o "$f" 2>"$err" &
		tp=$!
		while ! grep -q tracing "$err" 2>/dev/null; do sleep 0.02; done
		kp=$(pgrep -P $tp || echo $tp)
		read -r c0 t0 <<<"$(prog_stats "$kp")" ;;
	perf)
		sh -c 'echo $$ >"$1/cgroup.procs"; shift; exec "$@"' sh "$CG" perf record -q -e raw_syscalls:sys_enter \
			-e raw_syscalls:sys_exit -p "$sp" -m "$BUF" -o "$f" 2>"$err" &
		tp=$!
		# attached when perf has opened its events: one perf_event fd per CPU and event
		while [ "$(find /proc/$tp/fd -lname 'anon_inode:*perf_event*' 2>/dev/null | wc -l)" -lt 2 ]; do sleep 0.02; done
		sleep 0.2 ;;
	trace-cmd)
		mkdir -p "$TMP/tcd"
		sh -c 'echo $$ >"$1/cgroup.procs"; shift; exec "$@"' sh "$CG" unshare -m "$TMP/tc.sh" "$TMP/tcd" record \
			-e raw_syscalls:sys_enter -e raw_syscalls:sys_exit -P "$sp" -c -b $(( $(numfmt --from=iec "$BUF") / 1024 )) \
			-o "$f" >"$err" 2>&1 &
		tp=$!
		# attached when its per-CPU readers run (one thread each)
		while [ "$(ls /proc/$tp/task 2>/dev/null | wc -l)" -lt 1 ] || ! ls "$f".cpu* >/dev/null 2>&1; do
			kill -0 $tp 2>/dev/null || break
			sleep 0.02
		done
		sleep 0.2 ;;
	esac
	u0=$(cg_ns)
	echo >"$go"
	wait $sp
	[ "$t" = ksight ] || [ "$t" = ksight-old ] && read -r c1 t1 <<<"$(prog_stats "$kp")"
	case $t in
	trace-cmd) kill -INT $tp 2>/dev/null ;;
	perf) kill -INT $tp 2>/dev/null ;; # perf record -p keeps running once the task is gone on some versions
	esac
	[ "$t" = none ] || wait $tp
	u1=$(cg_ns)
	calls=$(sed -n 's/.*calls=\([0-9]*\).*/\1/p' "$TMP/storm.out")
	case $t in
	none) recorded=$((2 * calls)) ;;
	ksight | ksight-old) recorded=$("$KSIGHT" report "$f" 2>/dev/null | grep -c 'NR 110 ') ;;
	perf) recorded=$(perf script -i "$f" 2>/dev/null | grep -c 'NR 110 ') ;;
	trace-cmd) recorded=$(trace-cmd report -i "$f" 2>/dev/null | grep -c 'NR 110 ') ;;
	esac
	echo "$rate $((2 * calls)) $recorded $((2 * calls - recorded))" \
		"$(awk -v u=$((u1 - u0)) -v n="$recorded" 'BEGIN { printf "%.0f", n ? u / n : 0 }')" \
		"$(sed -n 's/.*cpu_ns_per_call=\([0-9.]*\).*/\1/p' "$TMP/storm.out")" \
		"$(awk -v a=$((t1 - t0)) -v n="$recorded" 'BEGIN { printf "%.0f", n ? a / n : 0 }')" \
		"$(awk -v a=$((t1 - t0)) -v n=$((c1 - c0)) 'BEGIN { printf "%.0f", n ? a / n : 0 }')" >>"$TMP/$t"
	[ "$recorded" -gt 0 ] || [ "$calls" -eq 0 ] || { echo "bench: $t at $rate recorded nothing:" >&2; tail -n 3 "$err" >&2; }
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
col() { awk -v t="$1" -v c="$2" '$1 == t { print $c }' "$TMP/$3" | median; }

for r in $(seq "$ROUNDS"); do
	for rate in $RATES; do
		# flat out, the statistics off: their two clock reads a run would be ksight's added time alone
		[ "$rate" = max ] && echo 0 >/proc/sys/kernel/bpf_stats_enabled || echo 1 >/proc/sys/kernel/bpf_stats_enabled
		for t in $TOOLS; do round "$t" "$rate"; done
	done
done
base=$(col max 6 none)
printf "%-10s %8s %10s %10s %9s %11s %10s %10s %11s %13s\n" tool rate "produced/s" "recorded" lost "lost rounds" \
	"cpu ns/ev" "bpf ns/ev" "bpf ns/run" "added ns/call"
for t in $TOOLS; do
	for rate in $RATES; do
		added=-
		[ "$rate" = max ] && added=$(awk -v a="$(col max 6 "$t")" -v b="$base" 'BEGIN { printf "%.0f", a - b }')
		printf "%-10s %8s %10.0f %10s %9s %11s %10s %10s %11s %13s\n" "$t" "$rate" \
			"$(awk -v p="$(col "$rate" 2 "$t")" -v s="$SECS" 'BEGIN { print p / s }')" "$(col "$rate" 3 "$t")" \
			"$(col "$rate" 4 "$t")" "$(awk -v r="$rate" '$1 == r && $4 > 0' "$TMP/$t" | wc -l)/$ROUNDS" \
			"$(col "$rate" 5 "$t")" "$(col "$rate" 7 "$t")" "$(col "$rate" 8 "$t")" "$added"
	done
done
echo "(medians of $ROUNDS rounds of $SECS s; 2-thread getppid storm, -p, $BUF per CPU; added ns/call: the storm's thread" \
	"CPU per call flat out over untraced ($base ns); $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg))"
