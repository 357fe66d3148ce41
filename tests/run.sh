#!/bin/bash
# Runs every test tier (unit, unit under ASan/UBSan, golden CLI, integration), prints each tier's time, then "N passed, N failed".
cd "$(dirname "$0")/.." || exit 1
pass=0 fail=0 skip=0
tmp=$(mktemp -d)
log=$tmp/log
fails=$tmp/fails
times=$tmp/times
filter=${1:-}
: >"$fails"
: >"$times"

now_ms() { echo $(($(date +%s%N) / 1000000)); }

count() {
	local out=$1
	pass=$((pass + $(grep -c '^PASS' "$out")))
	fail=$((fail + $(grep -c '^FAIL' "$out")))
	skip=$((skip + $(grep -c '^SKIP' "$out")))
}

# run_one NAME CMD...: one test's lines, its failures to $fails, its time ("TIER MS NAME") to $times
run_one() {
	local name=$1; shift
	[ -n "$filter" ] && [[ "$name" != *$filter* ]] && return
	# KS_RUN_ONLY="golden/ integration/": only tiers whose names start so; KS_RUN_EXCLUDE: names containing these
	if [ -n "${KS_RUN_ONLY:-}" ]; then
		local p ok=
		for p in $KS_RUN_ONLY; do [[ "$name" == "$p"* ]] && ok=1; done
		[ -n "$ok" ] || return
	fi
	for p in ${KS_RUN_EXCLUDE:-}; do [[ "$name" == *"$p"* ]] && return; done
	echo "== $name"
	local t0=$(now_ms)
	"$@" >"$log" 2>&1
	local rc=$?
	echo "${name%%/*} $(($(now_ms) - t0)) $name" >>"$times"
	# "# " lines are a test's notes for the reader (test_budget's table)
	grep -E '^(PASS|FAIL|SKIP|# )' "$log" | sed 's/^/   /'
	if [ $rc -ne 0 ] && ! grep -q '^FAIL' "$log"; then
		echo "FAIL: $name: exited $rc" >>"$log"
		echo "   FAIL: $name: exited $rc"
		tail -5 "$log" | sed 's/^/     | /'
	fi
	grep '^FAIL' "$log" | sed "s|^|$name: |" >>"$fails"
	count "$log"
}

# unit_tier TIER DIR: every unit binary of DIR; its counts last, as "COUNTS pass fail skip"
unit_tier() {
	local t
	for t in "$2"/test_*; do
		[ -x "$t" ] && run_one "$1/$(basename "$t")" "$t"
	done
	echo "COUNTS $pass $fail $skip"
}

# The two unit tiers run side by side (each test in its own temporary directory, no root, no
# system-wide state), each into its own files, printed in order; the other tiers one test at a time.
t0=$(now_ms)
(log=$tmp/log.unit fails=$tmp/fails.unit times=$tmp/times.unit unit_tier unit build/tests) >"$tmp/out.unit" &
(log=$tmp/log.san fails=$tmp/fails.san times=$tmp/times.san unit_tier unit-asan build/tests/san) >"$tmp/out.san" &
wait
unit_wall=$(($(now_ms) - t0))
for f in unit san; do
	grep -v '^COUNTS ' "$tmp/out.$f"
	read -r _ p f2 s < <(grep '^COUNTS ' "$tmp/out.$f")
	pass=$((pass + p)) fail=$((fail + f2)) skip=$((skip + s))
	cat "$tmp/fails.$f" >>"$fails" 2>/dev/null
	cat "$tmp/times.$f" >>"$times" 2>/dev/null
done
for t in tests/golden/test_*.sh tests/integration/test_*.sh; do
	[ -f "$t" ] && run_one "${t#tests/}" sh "$t"
done

# each tier's time (the unit tiers' sum of test times, and their wall time side by side), then
# the slowest integration tests: where the suite's budget goes
if [ -s "$times" ]; then
	echo "Time by tier:"
	awk '{ ms[$1] += $2; n[$1]++ }
	     END { split("unit unit-asan golden integration", o, " ")
		   for (i = 1; i <= 4; i++) if (o[i] in ms)
			printf "   %-12s %8.1f s  %3d tests\n", o[i], ms[o[i]] / 1000, n[o[i]] }' "$times"
	grep -q '^unit ' "$times" && grep -q '^unit-asan ' "$times" && printf '   %-12s %8.1f s  wall, side by side\n' "unit, both" "$(awk "BEGIN { print $unit_wall / 1000 }")"
	if grep -q '^integration ' "$times"; then
		echo "Slowest integration tests:"
		grep '^integration ' "$times" | sort -k2,2nr | head -10 |
			awk '{ printf "   %8.1f s  %s\n", $2 / 1000, $3 }'
	fi
fi
# the failures again at the end, where a CI log's tail shows them
if [ -s "$fails" ]; then
	echo "Failed checks:"
	sed 's/^/   /' "$fails"
fi
rm -rf "$tmp"
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
