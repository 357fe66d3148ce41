#!/bin/bash
# Runs the golden and integration tiers with a ksight built under ASan/UBSan, then lists every sanitizer report with its stack.
# Usage: bash tests/san.sh BINARY [FILTER]   (make test-san).  Exits 1 on any failed test or report.
cd "$(dirname "$0")/.." || exit 1
bin=${1:?usage: tests/san.sh BINARY [FILTER]}
[ -x "$bin" ] || { echo "san: $bin missing: make san" >&2; exit 2; }
logs=$(dirname "$bin")/log
rm -rf "$logs"
mkdir -p "$logs"
# test_privilege runs ksight as an unprivileged user: its reports must land here too (without
# this they were lost, and only the test's exit-status check showed that something failed)
chmod 1777 "$logs"
# One file per process (NAME.PID), so a report is kept even when the test hides ksight's
# stderr; the first finding ends the process (non-zero), which fails the test that ran it.
# LeakSanitizer is on: a leak makes ksight exit 23 at its end. (build-san/ksight is built by
# clang, whose one runtime also writes UBSan's reports to this log_path.)
export ASAN_OPTIONS="log_path=$PWD/$logs/asan:halt_on_error=1:detect_leaks=1:abort_on_error=0:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="log_path=$PWD/$logs/ubsan:print_stacktrace=1:halt_on_error=1"
export KSIGHT=$bin
# timing assertions that cannot hold under the sanitizers skip with that reason
export KSIGHT_SANITIZED=1
# the kernel matrix boots ./ksight in a guest: not this binary; test_fuzz builds its own
# sanitized targets
KS_RUN_ONLY="golden/ integration/" KS_RUN_EXCLUDE="test_kernels test_fuzz" bash tests/run.sh "${2:-}"
rc=$?
n=0
for f in "$logs"/*; do
	[ -s "$f" ] || continue
	n=$((n + 1))
	echo "== sanitizer report $f"
	cat "$f"
done
echo "$n sanitizer report(s)"
[ $n -eq 0 ] && [ $rc -eq 0 ]
