# Integration: `ksight diff A.folded B.folded --svg`: frames named in multi-byte characters (ä, CJK) too long for their width get labels cut at a character with "..", titles of names over 511 bytes too: well-formed, no "\xNN" of a split character.
. tests/lib.sh

A=$T_TMP/a.folded
B=$T_TMP/b.folded
# 200 characters each: ä is 2 bytes, 漢 and 字 3 (600 bytes, over a title's 511)
AE=$(python3 -c 'print("ä" * 200)')
CJK=$(python3 -c 'print("漢字" * 100)')
printf 'main;%s;%s 10\nmain;other 40\n' "$AE" "$CJK" >"$A"
printf 'main;%s;%s 30\nmain;other 20\n' "$AE" "$CJK" >"$B"
"$KSIGHT" diff "$A" "$B" --svg "$T_TMP/d.svg" >"$T_TMP/d.txt" 2>"$T_TMP/d.err"
t_eq "diff --svg of folded files: exit 0, nothing on stderr" "0 " "$? $(cat "$T_TMP/d.err")"
if command -v xmllint >/dev/null 2>&1; then
	t_ok "the differential svg: well-formed" xmllint --noout "$T_TMP/d.svg"
else
	t_skip "the differential svg: well-formed" "no xmllint"
fi
t_eq "no character split into \\xNN (labels and titles)" "0" "$(grep -c '\\x' "$T_TMP/d.svg")"
# B's frames under main: 30 of 50 samples of 1180 px, 708 px, 100 characters at 7 px: 98 and ".."
python3 - "$T_TMP/d.svg" "$AE" "$CJK" <<'PY' || t_fail "labels cut at a character" "see above"
import sys, xml.etree.ElementTree as ET
svg, ae, cjk = sys.argv[1:4]
ns = '{http://www.w3.org/2000/svg}'
labels = {}
for g in ET.parse(svg).getroot().iter(ns + 'g'):
    t, lab = g.find(ns + 'title'), g.find(ns + 'text')
    if t is not None and lab is not None:
        labels[t.text.split(' (B ')[0]] = lab.text
bad = 0
for name in (ae, cjk):
    want = name[:98] + '..'
    title = name if len(name.encode()) < 512 else name[:170]
    got = labels.get(title)
    ok = got == want
    print(('PASS: ' if ok else 'FAIL: ') + 'label of the %d-character %s frame: its first 98 characters and ".."' % (len(name), name[0])
          + ('' if ok else ': got %r' % got))
    bad |= not ok
sys.exit(bad)
PY
exit $T_FAILED
