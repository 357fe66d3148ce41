# Integration: the integration tier again inside each kernel of the matrix ($KERNELS, default debian-6.1 and debian-6.1-128cpu) under qemu.
. tests/lib.sh

# Each kernel runs the tests its descriptor lists in TESTS (those proven there); KS_TESTS="a b"
# (or KS_TESTS=all) runs others too (see pick_tests in tests/kernels/run.sh).  The tests no
# kernel lists are shown as skipped, with the reason.
: "${KERNELS:=debian-6.1 debian-6.1-128cpu}"
export KERNELS
if [ -z "${KS_TESTS:-}" ]; then
	proven=$(for k in $KERNELS; do (TESTS= && . "./tests/kernels/$k.conf" && echo "$TESTS"); done 2>/dev/null)
	for t in tests/integration/test_*.sh; do
		b=${t##*/test_}
		b=${b%.sh}
		case " $(echo $proven) kernels " in *" $b "*) continue ;; esac
		case $b in
		badinput) why="host only: kernel-independent CLI checks, too slow under TCG" ;;
		*) why="not yet proven in a guest; KS_TESTS=$b make test-kernels runs it" ;;
		esac
		t_skip "guest: $b" "$why"
	done
fi

# The guest's PASS/FAIL/SKIP lines come through, prefixed with the kernel name.
sh tests/kernels/run.sh >"$T_TMP/out" 2>"$T_TMP/err"
rc=$?
cat "$T_TMP/out"
case $rc in
0) ;;
3) t_skip "kernel matrix" "$(tail -1 "$T_TMP/err" | sed 's/^kernels: //')" ;;
*) grep -q '^FAIL' "$T_TMP/out" || t_fail "kernel matrix" "exit $rc: $(tail -3 "$T_TMP/err" | tr '\n' ' ')" ;;
esac
