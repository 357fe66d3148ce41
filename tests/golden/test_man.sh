# Golden: every command `ksight -h` lists has a man page, generated from its option table, that groff reads without a warning, whose whatis line lexgrog finds, and that names every option its -h names; make install puts them where man finds them.
. tests/lib.sh

if ! [ -x "$KSIGHT" ]; then
	t_fail "man pages" "no $KSIGHT; run make"
	exit 1
fi
for t in groff man lexgrog; do
	if ! command -v $t >/dev/null; then
		t_fail "man pages" "no $t: run scripts/setup.sh (groff, man-db)"
		exit 1
	fi
done

# the commands of `ksight -h` (as test_help.sh reads them) are those `help --commands` gives
"$KSIGHT" -h | awk '/^(Commands|Collectors):$/ { sec = 1; next } /^$/ { sec = 0 } sec && /^  [a-z]/ { print $1 }' >"$T_TMP/cmds"
"$KSIGHT" help --commands >"$T_TMP/cmds2"
if [ -s "$T_TMP/cmds" ] && cmp -s "$T_TMP/cmds" "$T_TMP/cmds2"; then
	t_pass "man: 'help --commands' lists the commands of 'ksight -h'"
else
	t_fail "man: 'help --commands' lists the commands of 'ksight -h'" "$(diff "$T_TMP/cmds" "$T_TMP/cmds2" | head -3 | tr '\n' ' ')"
fi

# m_render PAGE: the page as man shows it, one option to a line (no line is wrapped or hyphenated)
m_render() {
	MANWIDTH=1000 MAN_KEEP_FORMATTING= man -l "$1" 2>&1 | col -bx
}

# m_opts HELPFILE: the options of a -h, "-d, --duration" or "--errors", one per line
m_opts() {
	sed -n 's/^  \(-[^-], --[^ ]*\).*/\1/p; s/^      \(--[^ ]*\).*/\1/p' "$1"
}

# m_check NAME PAGE TITLE WHATIS-PREFIX: groff without warnings, lexgrog's whatis line
m_check() {
	groff -man -Tutf8 -ww -z "$2" >"$T_TMP/groff" 2>&1
	if [ -s "$T_TMP/groff" ]; then
		t_fail "man $1: groff -ww" "$(head -2 "$T_TMP/groff" | tr '\n' ' ')"
	else
		t_pass "man $1: groff -ww reads it without a warning"
	fi
	w=$(lexgrog "$2" 2>&1)
	case $w in
	*": \"$3 - "?*) t_pass "man $1: lexgrog finds the whatis line" ;;
	*) t_fail "man $1: lexgrog finds the whatis line" "$w" ;;
	esac
}

"$KSIGHT" help --man >"$T_TMP/ksight.1"
t_eq "man ksight: exit 0" 0 $?
m_check ksight "$T_TMP/ksight.1" ksight
m_render "$T_TMP/ksight.1" >"$T_TMP/ksight.txt"
missing=
for c in $(cat "$T_TMP/cmds"); do
	grep -q "ksight-$c(1)" "$T_TMP/ksight.txt" || missing="$missing $c"
done
t_eq "man ksight: names ksight-COMMAND(1) for every command" "" "$missing"

for c in $(cat "$T_TMP/cmds"); do
	page=$T_TMP/ksight-$c.1
	if ! "$KSIGHT" help --man "$c" >"$page" 2>"$T_TMP/err" || [ -s "$T_TMP/err" ]; then
		t_fail "man $c: generated" "$(head -1 "$T_TMP/err")"
		continue
	fi
	m_check "$c" "$page" "ksight-$c"
	# the whatis line is the summary `ksight -h` gives, its first sentence (a "libc.so.6" inside does not end it)
	want=$("$KSIGHT" -h | awk -v c="$c" '$1 == c && /^  [a-z]/ { sub(/^  [^ ]+ +/, ""); print; exit }' |
		sed 's/\. .*//; s/\.$//' | awk '{ if (substr($0, 2, 1) !~ /[A-Z]/) $0 = tolower(substr($0, 1, 1)) substr($0, 2); print }')
	t_eq "man $c: whatis is its summary in 'ksight -h'" "\"ksight-$c - $want\"" "$(lexgrog "$page" | sed 's/^[^:]*: //')"
	m_render "$page" >"$T_TMP/page.txt"
	"$KSIGHT" "$c" -h >"$T_TMP/help"
	# the --stacks mode of offcpu, syscalls and biolat has its own table: its options are on the page too
	grep -q '^      --stacks ' "$T_TMP/help" && "$KSIGHT" "$c" --stacks -h >>"$T_TMP/help"
	n=0 missing=
	for o in $(m_opts "$T_TMP/help" | tr ' ' '~'); do
		o=$(echo "$o" | tr '~' ' ')
		n=$((n + 1))
		grep -qF -- "$o" "$T_TMP/page.txt" || missing="$missing '$o'"
	done
	if [ "$n" -gt 0 ] && [ -z "$missing" ]; then
		t_pass "man $c: all $n options of its -h are on the page"
	else
		t_fail "man $c: all options of its -h are on the page" "$n options; missing:$missing"
	fi
done

# bad requests: one line, exit 2, nothing on stdout
for a in "--man no-such-cmd" "--completion fish" "--man a b" "--bogus"; do
	"$KSIGHT" help $a >"$T_TMP/bad.out" 2>"$T_TMP/bad.err"
	t_eq "help $a: exit 2, one line on stderr, nothing on stdout" "2 1 0" \
		"$? $(wc -l <"$T_TMP/bad.err") $(wc -c <"$T_TMP/bad.out")"
done

# make install: the binary, every page, both completions under DESTDIR/PREFIX; man finds the pages there
if [ "$KSIGHT" = ./ksight ]; then
	make -s install DESTDIR="$T_TMP/root" PREFIX=/usr >"$T_TMP/install" 2>&1
	t_eq "make install DESTDIR PREFIX: exit 0" 0 $?
	r=$T_TMP/root/usr
	missing=
	for f in bin/ksight share/man/man1/ksight.1 share/bash-completion/completions/ksight share/zsh/site-functions/_ksight \
		$(sed 's|.*|share/man/man1/ksight-&.1|' "$T_TMP/cmds"); do
		[ -s "$r/$f" ] || missing="$missing $f"
	done
	t_eq "make install: binary, $(($(wc -l <"$T_TMP/cmds") + 1)) pages and 2 completions installed" "" "$missing"
	t_eq "make install: man -M finds ksight-syscalls(1)" "$r/share/man/man1/ksight-syscalls.1" \
		"$(man -M "$r/share/man" -w ksight-syscalls 2>&1)"
	t_eq "make install: pages and completions are 0644, the binary 0755" "755 644 644" \
		"$(stat -c %a "$r/bin/ksight" "$r/share/man/man1/ksight.1" "$r/share/zsh/site-functions/_ksight" | tr '\n' ' ' | sed 's/ $//')"
else
	t_skip "make install" "KSIGHT=$KSIGHT is not the tree's ./ksight"
fi
exit $T_FAILED
