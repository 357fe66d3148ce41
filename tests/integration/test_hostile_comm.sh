# Integration: a process whose name is invalid UTF-8 (bytes 0xff 0xfe) shows escaped as \xff\xfe in the --heatmap SVG (xmllint) and in diff's text, JSON (python json.loads) and --svg, from a real profile and from a folded file holding the raw bytes.
. tests/lib.sh
need_root hostile_comm
for tool in xmllint python3; do
	command -v $tool >/dev/null 2>&1 || { t_skip "hostile comm" "no $tool"; exit 0; }
done

# the process: a copy of dd named by the two bytes (its comm), busy in read and write calls
NAME=$(printf '\377\376')
cp "$(command -v dd)" "$T_TMP/$NAME"
"$T_TMP/$NAME" if=/dev/zero of=/dev/null bs=1 count=100000000 2>/dev/null &
DD=$!
T_CLEANUP='kill $DD 2>/dev/null'

# is_utf8 FILE: decodes as UTF-8 (no raw 0xff 0xfe got through)
is_utf8() { python3 -c 'import sys; open(sys.argv[1], "rb").read().decode("utf-8")' "$1" 2>/dev/null; }
# json_ok FILE: python's json.loads takes it
json_ok() { python3 -c 'import json, sys; json.loads(open(sys.argv[1], "rb").read())' "$1" 2>/dev/null; }

# 1. --heatmap: the row of the process, by name
H=$T_TMP/h.svg
"$KSIGHT" syscalls -p $DD --by comm -i 0.2 -d 0.7 --heatmap "$H" >/dev/null 2>"$T_TMP/h.err"
t_eq "syscalls --heatmap: exit 0" 0 "$?"
t_ok "heatmap: well-formed XML (xmllint)" xmllint --noout "$H"
t_ok "heatmap: valid UTF-8" is_utf8 "$H"
t_eq "heatmap: the row title names the process escaped" 1 "$(grep -c 'comm=\\xff\\xfe ' "$H")"

# 2. a real profile of it, twice, then diff: the comm frame escaped in the folded files and in diff's outputs
"$KSIGHT" profile -p $DD -d 0.5 -o "$T_TMP/a.folded" 2>/dev/null
"$KSIGHT" profile -p $DD -d 0.5 -o "$T_TMP/b.folded" 2>/dev/null
t_eq "profile: every stack starts with the escaped comm" "0" "$(grep -vc '^\\xff\\xfe;' "$T_TMP/a.folded")"
# 3. and a folded file from elsewhere with the raw bytes as a frame
printf '%s;main;work 100\nok;main 50\n' "$NAME" >"$T_TMP/c.folded"
printf '%s;main;work 300\nok;main 40\n' "$NAME" >"$T_TMP/d.folded"
for pair in a.folded:b.folded c.folded:d.folded; do
	A=$T_TMP/${pair%%:*} B=$T_TMP/${pair#*:}
	"$KSIGHT" diff "$A" "$B" >"$T_TMP/d.txt" 2>"$T_TMP/d.err"
	rc=$?
	"$KSIGHT" diff -j "$A" "$B" >"$T_TMP/d.json" 2>>"$T_TMP/d.err"
	rc="$rc $?"
	"$KSIGHT" diff "$A" "$B" --svg "$T_TMP/d.svg" >/dev/null 2>>"$T_TMP/d.err"
	t_eq "diff $pair: text, -j and --svg exit 0" "0 0 0" "$rc $?"
	t_eq "diff $pair: text valid UTF-8, the frame escaped" "true true" \
		"$(is_utf8 "$T_TMP/d.txt" && echo true || echo false) $(grep -q '^ .* \\xff\\xfe;' "$T_TMP/d.txt" && echo true || echo false)"
	t_ok "diff $pair: -j is JSON (python json.loads)" json_ok "$T_TMP/d.json"
	t_eq "diff $pair: -j's stack names the frame escaped" true \
		"$(python3 -c 'import json, sys; d = json.load(open(sys.argv[1], "rb")); print(str(any(s["stack"].startswith("\\xff\\xfe;") for s in d["stacks"])).lower())' "$T_TMP/d.json")"
	t_ok "diff $pair: --svg is well-formed XML (xmllint)" xmllint --noout "$T_TMP/d.svg"
	t_eq "diff $pair: --svg valid UTF-8, the frame escaped" "true true" \
		"$(is_utf8 "$T_TMP/d.svg" && echo true || echo false) $(grep -q '\\xff\\xfe' "$T_TMP/d.svg" && echo true || echo false)"
done
kill $DD
wait $DD 2>/dev/null
exit $T_FAILED
