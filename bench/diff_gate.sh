#!/bin/bash
# Benchmark: how often `ksight diff --fail-on` fires on 20 A/A pairs (goal: at most once, 5%) and on 20 pairs whose slow path doubled (goal: every time), each side its own run of syscalls -- slowpath.
# Root; run from the repo.  PAIRS (20), SECS per run (1), MODES ("rt plain": the workload SCHED_FIFO as in
# tests/integration/test_diff_gate.sh, and as an ordinary task), GATE (the test's), OUT (build/bench/diff_gate.json).
#
# Unlike the test, which splits one run into 0.1 s intervals, every side here is a whole run of its own
# (a new process, a new seed for each A/A side: the same workload, not the same requests), so the
# A/A rate also holds what differs between runs: start-up, placement, the machine's load meanwhile.
# The doubled side reuses its A's seed (-x 2: the same requests take the slow path, twice as long).
# KEEP=DIR keeps the three reports of every pair that missed a goal (A/A fired, or A/doubled did not) there.
set -u
PAIRS=${PAIRS:-20}
SECS=${SECS:-1}
MODES=${MODES:-rt plain}
GATE=${GATE:-syscalls:syscall=clock_nanosleep.p90>+25%}
KSIGHT=${KSIGHT:-./ksight}
OUT=${OUT:-build/bench/diff_gate.json}
SP=build/workloads/slowpath
TMP=$(mktemp -d /tmp/ksight-bench-gate.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$(dirname "$OUT")"

# side FILE SEED [ARGS]: one run of the workload under the syscalls collector, its report in FILE
side() {
	local f=$1 seed=$2
	shift 2
	"$KSIGHT" syscalls -j -o "$f" -- $RT "$SP" -t "$SECS" -s "$seed" "$@" >/dev/null 2>"$f.err" ||
		{ echo "bench: run failed: $(tail -1 "$f.err")" >&2; exit 1; }
}
p90() { jq -r '[.rows[] | select(.syscall == "clock_nanosleep")][0] | "\(.count) \(.latency_ns.p90 / 1000 | round)"' "$1"; }
# gate A B: 1 when the gate fired, 0 when not; exits on anything else
gate() {
	"$KSIGHT" diff "$1" "$2" --fail-on "$GATE" >/dev/null 2>>"$TMP/gate.err"
	case $? in 0) echo 0 ;; 1) echo 1 ;; *) echo "bench: diff failed: $(tail -1 "$TMP/gate.err")" >&2; exit 1 ;; esac
}

load0=$(cut -d' ' -f1-3 /proc/loadavg)
: >"$TMP/res"
for mode in $MODES; do
	RT=""
	[ "$mode" = rt ] && RT="chrt -f 10"
	aa=0 ab=0
	for k in $(seq 1 "$PAIRS"); do
		side "$TMP/a1" $((1000 + 2 * k))
		side "$TMP/a2" $((1001 + 2 * k))
		side "$TMP/b" $((1000 + 2 * k)) -x 2
		x=$(gate "$TMP/a1" "$TMP/a2") || exit 1
		y=$(gate "$TMP/a1" "$TMP/b") || exit 1
		aa=$((aa + x)) ab=$((ab + y))
		if [ -n "${KEEP:-}" ] && [ "$x$y" != 01 ]; then
			mkdir -p "$KEEP" && for f in a1 a2 b; do cp "$TMP/$f" "$KEEP/$mode-$k-$f.json"; done
		fi
		echo "$mode pair $k: A/A fired $x, A/doubled fired $y; sleeps and p90 (us): A $(p90 "$TMP/a1"), A' $(p90 "$TMP/a2"), B $(p90 "$TMP/b")" >&2
		jq -nc --arg m "$mode" --argjson k "$k" --argjson x "$x" --argjson y "$y" \
			--arg a "$(p90 "$TMP/a1")" --arg a2 "$(p90 "$TMP/a2")" --arg b "$(p90 "$TMP/b")" \
			'{mode: $m, pair: $k, aa_fired: $x, ab_fired: $y,
			  p90: ([$a, $a2, $b] | map(split(" ")[1] | tonumber))}' >>"$TMP/res"
	done
	echo "$mode: A/A fired $aa of $PAIRS ($((100 * aa / PAIRS))%, goal <= 5%), A/doubled fired $ab of $PAIRS (goal: all)"
done
jq -s --arg gate "$GATE" --argjson secs "$SECS" --arg load0 "$load0" --arg load "$(cut -d' ' -f1-3 /proc/loadavg)" \
	'{gate: $gate, secs: $secs, load_before: $load0, load_after: $load,
	  modes: (group_by(.mode) | map({mode: .[0].mode, pairs: length,
		aa_fired: (map(.aa_fired) | add), ab_fired: (map(.ab_fired) | add)})), pairs: .}' "$TMP/res" >"$OUT"
jq -c '.modes[]' "$OUT"
