# Golden: `ksight -h` and `ksight CMD -h` for every command match tests/golden/help*.txt; `make golden-update` rewrites them.
#
# The commands come from the top-level help itself, so a new command or
# collector without a fixture fails here until its fixture is generated:
#     make golden-update        (or: KSIGHT_GOLDEN_UPDATE=1 sh tests/golden/test_help.sh)
# then review `git diff tests/golden` and commit the files.
. tests/lib.sh

G=${GOLDEN_DIR:-tests/golden}
UPDATE=${KSIGHT_GOLDEN_UPDATE:-}
REGEN="run 'make golden-update' and commit $G"

# Names listed under "Commands:" and "Collectors:" in `ksight -h`, one per line.
g_commands() {
	awk '/^(Commands|Collectors):$/ { sec = 1; next } /^$/ { sec = 0 } sec && /^  [a-z]/ { print $1 }' "$1"
}

# g_check NAME FIXTURE USAGE ARGS...: `ksight ARGS` exits 0, prints nothing
# on stderr, starts with the line USAGE..., and prints exactly FIXTURE.
g_check() {
	_name=$1 _fix=$2 _usage=$3
	shift 3
	"$KSIGHT" "$@" >"$T_TMP/out" 2>"$T_TMP/err"
	_rc=$?
	if [ -n "$UPDATE" ] && [ "$_rc" = 0 ]; then
		cp "$T_TMP/out" "$_fix"
		echo "updated $_fix"
	fi
	if [ "$_rc" != 0 ]; then
		t_fail "$_name" "'ksight $*' exited $_rc: $(head -1 "$T_TMP/err")"
	elif [ -s "$T_TMP/err" ]; then
		t_fail "$_name" "'ksight $*' wrote to stderr: $(head -1 "$T_TMP/err")"
	elif [ "$(head -1 "$T_TMP/out" | cut -c1-${#_usage})" != "$_usage" ]; then
		t_fail "$_name" "'ksight $*' does not start with '$_usage': $(head -1 "$T_TMP/out")"
	elif [ ! -f "$_fix" ]; then
		t_fail "$_name" "no fixture $_fix for 'ksight $*'; $REGEN"
	elif ! cmp -s "$_fix" "$T_TMP/out"; then
		diff -u "$_fix" "$T_TMP/out" | sed 's/^/    | /' | head -40
		t_fail "$_name" "'ksight $*' differs from $_fix (diff above); if the change is intended, $REGEN"
	else
		t_pass "$_name"
	fi
}

if ! [ -x "$KSIGHT" ]; then
	t_fail "golden help" "no $KSIGHT; run make"
	exit 1
fi

"$KSIGHT" -h >"$T_TMP/top" 2>/dev/null
cmds=$(g_commands "$T_TMP/top")
if [ -z "$cmds" ]; then
	t_fail "golden help: command list" "no commands found under 'Commands:'/'Collectors:' in 'ksight -h'"
	exit 1
fi

g_check "help top-level" "$G/help.txt" "Usage: ksight COMMAND" -h
for c in $cmds; do
	g_check "help $c" "$G/help-$c.txt" "Usage: ksight $c " "$c" -h
done

# the other spellings of the top-level help say the same; no arguments is usage on stderr, exit 2
for a in --help help; do
	"$KSIGHT" $a >"$T_TMP/alt" 2>&1
	if cmp -s "$T_TMP/top" "$T_TMP/alt"; then t_pass "help: 'ksight $a' is 'ksight -h'"; else t_fail "help: 'ksight $a' is 'ksight -h'" "differs"; fi
done
"$KSIGHT" >"$T_TMP/none.out" 2>"$T_TMP/none.err"
rc=$?
t_eq "help: no command exits 2" 2 "$rc"
if [ ! -s "$T_TMP/none.out" ] && cmp -s "$T_TMP/top" "$T_TMP/none.err"; then
	t_pass "help: no command prints the usage on stderr"
else
	t_fail "help: no command prints the usage on stderr" "stdout not empty or stderr differs from 'ksight -h'"
fi

# 'ksight help CMD' is 'ksight CMD -h' for every command and collector; an unknown one is one line, exit 2
bad=
for c in $cmds; do
	"$KSIGHT" help "$c" >"$T_TMP/h1" 2>&1
	"$KSIGHT" "$c" -h >"$T_TMP/h2" 2>&1
	cmp -s "$T_TMP/h1" "$T_TMP/h2" || bad="$bad $c"
done
t_eq "help CMD: 'ksight help CMD' is 'ksight CMD -h' for all $(echo "$cmds" | wc -l) commands" "" "$bad"
"$KSIGHT" help no-such-cmd >"$T_TMP/hu.out" 2>"$T_TMP/hu.err"
t_eq "help CMD: an unknown command is one line on stderr, exit 2" "2 0 1" \
	"$? $(wc -c <"$T_TMP/hu.out") $(wc -l <"$T_TMP/hu.err")"
"$KSIGHT" help syscalls extra >/dev/null 2>"$T_TMP/hx.err"
t_eq "help CMD: a second argument is refused, exit 2" "2 1" "$? $(wc -l <"$T_TMP/hx.err")"

# an option's help names -i only in a command that has -i (-j said "one line per interval with -i" in all)
bad=
for c in $cmds; do
	"$KSIGHT" "$c" -h >"$T_TMP/hi"
	grep -q '^  -i, --interval' "$T_TMP/hi" && continue
	sed -n '/^Options:/,$p' "$T_TMP/hi" | grep -qE '(^|[ (])-i([ ,;)]|$)' && bad="$bad $c"
done
t_eq "help: no command without -i names -i among its options" "" "$bad"

# -V and --version are 'ksight version'
"$KSIGHT" version >"$T_TMP/v"
for a in -V --version; do
	"$KSIGHT" $a >"$T_TMP/va" 2>&1
	if [ -s "$T_TMP/v" ] && cmp -s "$T_TMP/v" "$T_TMP/va"; then t_pass "version: 'ksight $a' is 'ksight version'"; else t_fail "version: 'ksight $a' is 'ksight version'" "$(head -1 "$T_TMP/va")"; fi
done

# a fixture whose command is gone is stale
for f in "$G"/help-*.txt; do
	[ -f "$f" ] || continue
	c=${f##*/help-}
	c=${c%.txt}
	if ! echo "$cmds" | grep -qx "$c"; then
		if [ -n "$UPDATE" ]; then
			rm -f "$f"
			echo "removed $f"
		else
			t_fail "help $c" "fixture $f names no command in 'ksight -h'; $REGEN"
		fi
	fi
done
exit $T_FAILED
