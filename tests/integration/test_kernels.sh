# Integration: the integration tier again inside each kernel of the matrix ($KERNELS, default debian-6.1) under qemu.
. tests/lib.sh

# The guest's PASS/FAIL/SKIP lines come through, prefixed with the kernel name.
sh tests/kernels/run.sh >"$T_TMP/out" 2>"$T_TMP/err"
rc=$?
cat "$T_TMP/out"
case $rc in
0) ;;
3) t_skip "kernel matrix" "$(tail -1 "$T_TMP/err" | sed 's/^kernels: //')" ;;
*) grep -q '^FAIL' "$T_TMP/out" || t_fail "kernel matrix" "exit $rc: $(tail -3 "$T_TMP/err" | tr '\n' ' ')" ;;
esac
