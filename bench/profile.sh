#!/bin/bash
# CPU cost of `ksight profile -F 99` system-wide (fp and dwarf, symbolization included) against perf record -g / --call-graph dwarf + perf script, on a busy machine.
#
# Workload: two prof_qsort processes (no frame pointers, hot_spin under libc's
# qsort) keep both CPUs busy.  For each tool and round: run it for DUR seconds
# system-wide at 99 Hz and take the CPU time (user + system) of the tool and
# its children (perf record and perf script together) from bash's `times`.
# Reports medians over ROUNDS, as percent of one CPU over DUR, and the stack
# depth each recovers for prof_qsort's samples (ksight: JSON unwind.mean_user_depth;
# perf: frames per prof_qsort sample in perf script's output), and ksight's
# user-space unwinding time per sample.
#
# Environment: ROUNDS (3), DUR seconds (10), KSIGHT (./ksight), OUT (build/bench/profile.json).
set -u
cd "$(dirname "$0")/.." || exit 1
ROUNDS=${ROUNDS:-3}
DUR=${DUR:-10}
KSIGHT=${KSIGHT:-./ksight}
OUT=${OUT:-build/bench/profile.json}
TMP=$(mktemp -d /tmp/ksight-bench-profile.XXXXXX)
W=build/workloads/prof_qsort
mkdir -p "$(dirname "$OUT")"
trap 'kill $WP1 $WP2 2>/dev/null; rm -rf "$TMP"' EXIT

command -v perf > /dev/null || { echo "perf not installed (linux-perf)" >&2; exit 1; }
$W $((ROUNDS * DUR * 6 + 60)) > /dev/null & WP1=$!
$W $((ROUNDS * DUR * 6 + 60)) > /dev/null & WP2=$!

# cpu_of CMD...: seconds of CPU (user + sys) CMD and its children used
cpu_of() {
	bash -c '"$@" > /dev/null 2>&1; times' _ "$@" | tail -1 |
		awk '{ t = 0; for (i = 1; i <= 2; i++) { split($i, a, "m"); sub("s", "", a[2]); t += a[1] * 60 + a[2] } print t }'
}

perf_run() { # MODE(fp|dwarf) DEPTHFILE
	if [ "$1" = dwarf ]; then cg="--call-graph dwarf"; else cg="-g"; fi
	perf record -q -e cpu-clock -F 99 $cg -a -o "$TMP/perf.data" -- sleep "$DUR" > /dev/null 2>&1
	perf script -i "$TMP/perf.data" 2> /dev/null > "$TMP/perf.txt"
}

depth_perf() { # mean frames per prof_qsort sample in perf script output
	awk '/^prof_qsort / { s = 1; n = 0; next } s && /^$/ { if (n) { t += n; c++ } s = 0; next } s { n++ } END { printf "%.1f\n", c ? t / c : 0 }' "$TMP/perf.txt"
}

declare -A CPU DEPTH UNW
for r in $(seq 1 "$ROUNDS"); do
	for tool in ksight_fp ksight_dwarf perf_fp perf_dwarf; do
		case $tool in
		ksight_fp) c=$(cpu_of "$KSIGHT" profile -F 99 -d "$DUR" -j -o "$TMP/k.json");;
		ksight_dwarf) c=$(cpu_of "$KSIGHT" profile -F 99 -d "$DUR" --call-graph dwarf -j -o "$TMP/k.json");;
		perf_fp) c=$(cpu_of perf_run fp);;
		perf_dwarf) c=$(cpu_of perf_run dwarf);;
		esac
		CPU[$tool]="${CPU[$tool]:-} $c"
		case $tool in
		ksight_*)
			d=$(jq '.unwind.mean_user_depth' "$TMP/k.json")
			# prof_qsort's own stacks: frames below the comm, user ones
			d=$(jq '[.stacks[] | select(.frames[0].name == "prof_qsort") | {c: .count, n: ([.frames[] | select(.kind == "user")] | length)}] | (map(.c * .n) | add) / (map(.c) | add)' "$TMP/k.json")
			UNW[$tool]="${UNW[$tool]:-} $(jq '.unwind.user_ns_per_sample' "$TMP/k.json")";;
		perf_*) d=$(depth_perf);;
		esac
		DEPTH[$tool]="${DEPTH[$tool]:-} $d"
		echo "round $r $tool cpu ${c}s depth $d" >&2
	done
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END { print NR ? a[int((NR + 1) / 2)] : 0 }'; }
{
	echo "{"
	first=1
	for tool in ksight_fp ksight_dwarf perf_fp perf_dwarf; do
		m=$(echo "${CPU[$tool]}" | median)
		[ $first = 1 ] || echo ","
		first=0
		printf '  "%s": {"cpu_s": %s, "cpu_pct_of_one": %s, "prof_qsort_user_depth": %s' "$tool" "$m" \
			"$(awk -v c="$m" -v d="$DUR" 'BEGIN { printf "%.2f", 100 * c / d }')" "$(echo "${DEPTH[$tool]}" | median)"
		[ -n "${UNW[$tool]:-}" ] && printf ', "user_unwind_ns_per_sample": %s' "$(echo "${UNW[$tool]}" | median)"
		printf '}'
	done
	echo
	echo "}"
} | tee "$OUT"
