# Integration: the integration tier again inside each kernel of the matrix ($KERNELS, default debian-6.1) under qemu.
. tests/lib.sh

# The guest runs the tests proven on every kernel of the matrix; KS_TESTS="a b" (or
# KS_TESTS=all) runs others too.  The rest are listed as skipped, with the reason.
#  - badinput checks option parsing and clean exits, which do not depend on the kernel,
#    and takes longer than all the rest under TCG: host only.
: "${KS_TESTS:=syscalls hooks doctor runqlat offcpu list mem tcp biolat}"
[ "$KS_TESTS" = all ] && KS_TESTS=
if [ -n "$KS_TESTS" ]; then
	for t in tests/integration/test_*.sh; do
		b=${t##*/test_}
		b=${b%.sh}
		case " $KS_TESTS kernels " in *" $b "*) continue ;; esac
		case $b in
		badinput) why="host only: kernel-independent CLI checks, too slow under TCG" ;;
		*) why="not yet proven in the guest; KS_TESTS=$b make test-kernels runs it" ;;
		esac
		t_skip "guest: $b" "$why"
	done
fi
export KS_TESTS

# The guest's PASS/FAIL/SKIP lines come through, prefixed with the kernel name.
sh tests/kernels/run.sh >"$T_TMP/out" 2>"$T_TMP/err"
rc=$?
cat "$T_TMP/out"
case $rc in
0) ;;
3) t_skip "kernel matrix" "$(tail -1 "$T_TMP/err" | sed 's/^kernels: //')" ;;
*) grep -q '^FAIL' "$T_TMP/out" || t_fail "kernel matrix" "exit $rc: $(tail -3 "$T_TMP/err" | tr '\n' ' ')" ;;
esac
