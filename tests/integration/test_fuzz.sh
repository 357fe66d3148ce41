# Integration: the libFuzzer targets (the --filter parser/compiler/interpreter, the recording reader and its renderers) run for a bounded time from their committed seed corpora without a finding.
. tests/lib.sh

SECS=${KS_FUZZ_SECONDS:-25}
CLANG=${CLANG:-clang-14}

# libFuzzer ships in clang's runtime package: without it, say so rather than fail
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }' >"$T_TMP/probe.c"
if ! "$CLANG" -fsanitize=fuzzer,address "$T_TMP/probe.c" -o "$T_TMP/probe" 2>"$T_TMP/probe.err"; then
	t_skip "fuzz" "$CLANG cannot link libFuzzer ($(head -n 1 "$T_TMP/probe.err"); scripts/setup.sh installs libclang-rt-14-dev)"
	exit 0
fi
if ! make -s fuzz >"$T_TMP/build" 2>&1; then
	t_fail "fuzz: the targets build" "$(tail -n 3 "$T_TMP/build" | tr '\n' ' ')"
	exit 1
fi
mkdir -p build/fuzz/artifacts
for t in filter recfile; do
	# new inputs go to a scratch directory (the first one), the committed seeds stay as they are
	mkdir -p "$T_TMP/corpus.$t"
	dict=
	[ -f "tests/fuzz/$t.dict" ] && dict=-dict=tests/fuzz/$t.dict
	LSAN_OPTIONS=suppressions=$PWD/tests/fuzz/lsan.supp build/fuzz/fuzz_$t -max_total_time="$SECS" -timeout=10 \
		-rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="build/fuzz/artifacts/$t-" $dict \
		"$T_TMP/corpus.$t" "tests/fuzz/corpus/$t" >"$T_TMP/log.$t" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$T_TMP/log.$t")
	echo "# fuzz_$t: ${runs:-?} inputs in ${SECS} s, corpus $(ls "$T_TMP/corpus.$t" | wc -l) new"
	if [ $rc -eq 0 ] && [ -n "$runs" ]; then
		t_pass "fuzz $t: no finding in ${SECS} s"
	else
		t_fail "fuzz $t" "exit $rc: $(grep -m 1 -E 'ERROR|SUMMARY' "$T_TMP/log.$t") (the input is in build/fuzz/artifacts/)"
	fi
done
