#!/bin/bash
# Runs every test tier (unit, unit under ASan/UBSan, golden CLI, integration) and prints "N passed, N failed".
cd "$(dirname "$0")/.." || exit 1
pass=0 fail=0 skip=0
log=$(mktemp)
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
	echo "== $name"
	"$@" >"$log" 2>&1
	local rc=$?
	grep -E '^(PASS|FAIL|SKIP)' "$log" | sed 's/^/   /'
	if [ $rc -ne 0 ] && ! grep -q '^FAIL' "$log"; then
		echo "FAIL: $name: exited $rc" >>"$log"
		echo "   FAIL: $name: exited $rc"
		tail -5 "$log" | sed 's/^/     | /'
	fi
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
rm -f "$log"
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
