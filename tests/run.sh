#!/bin/bash
# Runs every test tier (unit, unit under ASan/UBSan, golden CLI, integration) and prints "N passed, N failed".
cd "$(dirname "$0")/.." || exit 1
pass=0 fail=0 skip=0
log=$(mktemp)
fails=$(mktemp)
filter=${1:-}

count() {
	local out=$1
	pass=$((pass + $(grep -c '^PASS' "$out")))
	fail=$((fail + $(grep -c '^FAIL' "$out")))
	skip=$((skip + $(grep -c '^SKIP' "$out")))
}

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
	"$@" >"$log" 2>&1
	local rc=$?
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

for t in build/tests/test_*; do
	[ -x "$t" ] && run_one "unit/$(basename "$t")" "$t"
done
for t in build/tests/san/test_*; do
	[ -x "$t" ] && run_one "unit-asan/$(basename "$t")" "$t"
done
for t in tests/golden/test_*.sh tests/integration/test_*.sh; do
	[ -f "$t" ] && run_one "${t#tests/}" sh "$t"
done
# the failures again at the end, where a CI log's tail shows them
if [ -s "$fails" ]; then
	echo "Failed checks:"
	sed 's/^/   /' "$fails"
fi
rm -f "$log" "$fails"
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
