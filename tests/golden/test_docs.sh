# Golden: the docs stay true to the code: new-collector.md's quoted blocks are still in their files, the paths and names the guides give exist, every link and anchor resolves, the README lists every command.
#
# A block in docs/new-collector.md is "<!-- from PATH -->" then a fenced block whose lines
# must be consecutive lines of PATH, exactly (tabs included).  When a check fails, update
# the doc (copy the block again from the file), not the code.
. tests/lib.sh

DOCS=${DOCS_DIR:-docs}
README=${README_FILE:-README.md}
GUIDES="$DOCS/new-collector.md $DOCS/architecture.md"

for g in $GUIDES; do
	[ -f "$g" ] || { t_fail "guides" "$g is missing"; exit 1; }
done

# --- quoted blocks: each one a run of consecutive lines of its file
awk -v out="$T_TMP/blk" '
	/^<!-- from [^ ]+ -->$/ { src = $3; want = 1; next }
	want && /^```/ { n++; f = out "." n; print src > (out ".src." n); close(out ".src." n); inb = 1; want = 0; next }
	inb && /^```$/ { close(f); inb = 0; next }
	inb { print > f }
	END { print n + 0 > (out ".n") }
' "$DOCS/new-collector.md"
nblk=$(cat "$T_TMP/blk.n")
if [ "$nblk" -lt 10 ]; then
	t_fail "new-collector: quoted blocks" "found $nblk '<!-- from PATH -->' blocks, expected at least 10"
fi
i=1
while [ "$i" -le "$nblk" ]; do
	src=$(cat "$T_TMP/blk.src.$i")
	first=$(head -1 "$T_TMP/blk.$i")
	if [ ! -f "$src" ]; then
		t_fail "new-collector: block $i" "'$src' does not exist"
	elif ! awk 'NR == FNR { b[++nb] = $0; next }
		    { s[++ns] = $0 }
		    END { for (i = 1; i + nb - 1 <= ns; i++) { for (j = 1; j <= nb && s[i + j - 1] == b[j]; j++); if (j > nb) exit 0 } exit 1 }' \
		"$T_TMP/blk.$i" "$src"; then
		t_fail "new-collector: block $i" "the block starting '$first' is no longer in $src as quoted: copy it again"
	else
		t_pass "new-collector: block $i ($src) matches"
	fi
	i=$((i + 1))
done

# --- paths the guides name exist (globs as globs; NAME and other capitals are placeholders)
grep -v '^<!-- from' $GUIDES | grep -oE '(^|[ `(])(src|bpf|include|tests|docs|deploy|bench|scripts)/[][A-Za-z0-9_./*,-]*[]A-Za-z0-9_*/]' |
	sed 's/^[ `(]//' | grep -v '[A-Z]' | sort -u >"$T_TMP/paths"
missing=
while read -r p; do
	# shellcheck disable=SC2086 # a glob on purpose
	set -- $p
	[ -e "$1" ] || missing="$missing $p"
done <"$T_TMP/paths"
t_eq "guides: every path named exists ($(wc -l <"$T_TMP/paths") paths)" "" "$missing"

# --- names the guides give in backticks or as ks_* exist in the code
grep -rhoE '[A-Za-z_][A-Za-z0-9_]*' src bpf include tests/unit tests/integration tests/lib.sh Makefile |
	sort -u >"$T_TMP/ids"
{
	grep -oE '`[A-Za-z_][A-Za-z0-9_]*(\(\))?`' $GUIDES | sed 's/.*:`//; s/[`()]//g' | grep '_'
	grep -ohE '\b(ks|prom|KS)_[A-Za-z0-9_]+' $GUIDES
} | grep -v 'NAME\|_COLUMN$' | sort -u >"$T_TMP/names"
missing=$(comm -23 "$T_TMP/names" "$T_TMP/ids" | tr '\n' ' ')
t_eq "guides: every function, type and macro named exists ($(wc -l <"$T_TMP/names") names)" "" "$missing"

# --- links: every relative link of the README and docs/ to a file that exists, an anchor to a heading
# g_slug FILE: the anchors of FILE's headings, as GitHub makes them
g_slug() {
	awk '/^```/ { code = !code; next } !code && /^#+ / {
		h = tolower($0); sub(/^#+ /, "", h); gsub(/[^a-z0-9 _-]/, "", h); gsub(/ /, "-", h); print h }' "$1"
}
bad=
for f in "$README" "$DOCS"/*.md; do
	dir=$(dirname "$f")
	awk '/^```/ { code = !code; next } !code' "$f" | grep -oE '\]\([^) ]+\)' | sed 's/^](//; s/)$//' |
		grep -vE '^(https?|mailto):' >"$T_TMP/links" || continue
	while read -r l; do
		path=${l%%#*}
		anchor=
		case $l in *'#'*) anchor=${l#*#} ;; esac
		target=$f
		[ -n "$path" ] && target=$dir/$path
		if [ ! -e "$target" ]; then
			bad="$bad $f:$l"
		elif [ -n "$anchor" ] && ! g_slug "$target" | grep -qxF "$anchor"; then
			bad="$bad $f:$l(no-heading)"
		fi
	done <"$T_TMP/links"
done
t_eq "links: every relative link and anchor of the README and docs/ resolves" "" "$bad"

# --- the README: short, and a row for every command
n=$(wc -l <"$README")
t_in "README under 300 lines" 1 299 "$n"
if [ -x "$KSIGHT" ]; then
	"$KSIGHT" -h >"$T_TMP/help" 2>&1
	missing=
	for c in $(awk '/^(Commands|Collectors):$/ { s = 1; next } /^$/ { s = 0 } s && /^  [a-z]/ { print $1 }' "$T_TMP/help"); do
		[ "$c" = version ] && continue
		grep -q "^| [^|]*\`$c\`.*](docs/" "$README" || missing="$missing $c"
	done
	t_eq "README: a table row with a docs link for every command of 'ksight -h'" "" "$missing"
else
	t_skip "README: a row for every command" "no $KSIGHT"
fi
exit $T_FAILED
