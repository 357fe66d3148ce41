# Integration: `ksight profile` without --call-graph gives full user stacks of a Debian binary built without frame pointers (gzip, libc): cfi on x86-64, frame pointers per module where tables are missing, said by -v.
. tests/lib.sh

if [ "$(uname -m)" != x86_64 ]; then
	t_skip "profile default" "cfi is the default on x86-64 only"
	exit 0
fi
GZ=$(command -v gzip) || { t_skip "profile default" "no gzip"; exit 0; }

# p_rooted FOLDED: "TOTAL ROOTED": samples, and those whose stack reaches libc's start (unwound from the leaf to main's caller)
p_rooted() {
	awk '{ n = $NF; t += n; if ($0 ~ /;__libc_start_call_main;/) r += n } END { print t + 0, r + 0 }' "$1"
}

# gzip compressing ksight itself: about a second on the CPU, every sample in gzip or libc
"$KSIGHT" profile -v -F 999 --user-only -o "$T_TMP/def.folded" -- "$GZ" -6 -c "$KSIGHT" >/dev/null 2>"$T_TMP/def.err"
t_eq "default: exit 0" 0 "$?"
set -- $(p_rooted "$T_TMP/def.folded")
[ "$1" -ge 100 ] && [ "$2" -ge $(($1 * 9 / 10)) ] &&
	t_pass "default: $2 of $1 gzip samples unwound from the leaf to __libc_start_call_main" ||
	t_fail "default: full stacks" "$2 of $1 samples reach __libc_start_call_main, want >= 90% of >= 100: $(sort -t' ' -k2 -nr "$T_TMP/def.folded" | head -c 300)"
t_ok "default -v: says the call graph is cfi, the default" grep -q "user stacks by cfi.*(the default)" "$T_TMP/def.err"
t_ok "default -v: says how gzip's frames are walked" grep -q "cfi: $GZ: tables, [0-9]* rows" "$T_TMP/def.err"
t_ok "default -v: says how libc's frames are walked" grep -q "cfi: .*/libc.so.6: tables, [0-9]* rows" "$T_TMP/def.err"

# frame pointers, as the default was: the walk stops in gzip (no frame pointers), never at libc's start
"$KSIGHT" profile -F 999 --user-only --call-graph fp -o "$T_TMP/fp.folded" -- "$GZ" -6 -c "$KSIGHT" >/dev/null 2>"$T_TMP/fp.err"
set -- $(p_rooted "$T_TMP/fp.folded")
[ "$1" -ge 100 ] && [ "$2" -le $(($1 / 10)) ] &&
	t_pass "fp: $2 of $1 samples reach libc's start (why cfi is the default)" ||
	t_fail "fp: stacks stop early" "$2 of $1 samples reach __libc_start_call_main"
t_ok "fp -v: no 'the default'" sh -c "! grep -q 'the default' '$T_TMP/fp.err'"

# --kernel-only keeps working without --call-graph (cfi unwinds user stacks: not taken then)
"$KSIGHT" profile -F 999 --kernel-only -d 0.3 -o "$T_TMP/k.folded" 2>"$T_TMP/k.err"
t_eq "kernel-only without --call-graph: exit 0" 0 "$?"
exit $T_FAILED
