#!/bin/bash
# Benchmark: the in-kernel cost of `ksight record --filter` per event (kernel.bpf_stats_enabled: the ks_record program's run time over its run count), by filter kind, on raw_syscalls:sys_enter.
#
# Per variant and round: `ksight record --comm getppid_loop [--filter EXPR]` runs while the
# getppid_loop workload makes REPS x CALLS raw getppid calls on CPU 0; the program's run_cnt and
# run_time_ns are read (bpftool, by the prog id in ksight's own fds) before and after.  The other
# processes' syscalls run the program too (and stop at --comm): a few percent of the count.
# Medians over ROUNDS rounds, variants interleaved.  Root; run from the repo.
set -u
ROUNDS=${ROUNDS:-5}
CALLS=${CALLS:-200000}
REPS=${REPS:-5}
KSIGHT=${KSIGHT:-./ksight}
LOOP=build/bench/getppid_loop
TMP=$(mktemp -d /tmp/ksight-bench-recfilter.XXXXXX)
SAVED=$(cat /proc/sys/kernel/bpf_stats_enabled)
trap 'echo "$SAVED" >/proc/sys/kernel/bpf_stats_enabled; rm -rf "$TMP"' EXIT

mkdir -p build/bench
[ -x "$LOOP" ] && [ "$LOOP" -nt bench/getppid_loop.c ] ||
	cc -O2 -Wall -Wextra -Werror -D_GNU_SOURCE -o "$LOOP" bench/getppid_loop.c || exit 1

NAMES=(none int-reject int-accept 4-ints-accept comm-glob-accept comm-glob-reject)
FILTERS=("" 'id == 99999' 'id == 110' 'id == 1 || id == 2 || id == 3 || id == 110' \
	'comm ~ "getppid*"' 'comm ~ "*x*"')

prog_stats() { # PID: "run_cnt run_time_ns" of the ks_record program it holds
	local id
	id=$(awk '/^prog_id:/ { print $2 }' /proc/"$1"/fdinfo/* 2>/dev/null | sort -u |
		while read -r i; do bpftool -j prog show id "$i" 2>/dev/null; done |
		jq -r 'select(.name == "ks_record") | .id' | head -n 1)
	bpftool -j prog show id "$id" | jq -r '"\(.run_cnt // 0) \(.run_time_ns // 0)"'
}

echo 1 >/proc/sys/kernel/bpf_stats_enabled
for r in $(seq "$ROUNDS"); do
	for k in "${!NAMES[@]}"; do
		args=(record -e raw_syscalls:sys_enter --comm getppid_loop -b 16M -o "$TMP/f")
		[ -n "${FILTERS[$k]}" ] && args+=(--filter "${FILTERS[$k]}")
		"$KSIGHT" "${args[@]}" 2>"$TMP/err" &
		kp=$!
		while ! grep -q tracing "$TMP/err" 2>/dev/null; do sleep 0.05; done
		read -r c0 t0 <<<"$(prog_stats $kp)"
		"$LOOP" -n "$CALLS" -r "$REPS" -c 0 >/dev/null 2>&1
		read -r c1 t1 <<<"$(prog_stats $kp)"
		kill -INT $kp
		wait $kp
		rec=$("$KSIGHT" info -j "$TMP/f" | jq -r '.trailer | "\(.recorded) \(.filtered) \(.lost)"')
		echo "${NAMES[$k]} $((c1 - c0)) $((t1 - t0)) $rec" >>"$TMP/raw"
	done
done
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
printf "%-18s %-58s %10s %12s %10s %8s\n" variant filter "ns/event" "runs" recorded lost
for k in "${!NAMES[@]}"; do
	n=${NAMES[$k]}
	ns=$(awk -v n="$n" '$1 == n && $2 > 0 { print $3 / $2 }' "$TMP/raw" | median)
	printf "%-18s %-58s %10.1f %12s %10s %8s\n" "$n" "'${FILTERS[$k]}'" "$ns" \
		"$(awk -v n="$n" '$1 == n { print $2 }' "$TMP/raw" | median)" \
		"$(awk -v n="$n" '$1 == n { print $4 }' "$TMP/raw" | median)" \
		"$(awk -v n="$n" '$1 == n { print $6 }' "$TMP/raw" | median)"
done
echo "(medians of $ROUNDS rounds; $REPS x $CALLS getppid on CPU 0 per round; bpf_stats on; $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg))"
