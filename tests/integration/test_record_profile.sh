# Integration: record --collect syscalls --profile: the profile's symbolised stacks inside the recording beside the collector's reports; report --folded/--svg/--pprof (go tool pprof reads it), info, diff --svg of two recordings; samples = the command's CPU time x HZ within 10%; hostile stacks chunks refused in one line, never a crash; a kill -9 keeps the intervals' stacks written (run it under build-san/ksight: tests/san.sh).
. tests/lib.sh
need_root record_profile
W=$WORKLOADS/prof_qsort
HZ=99
F=$T_TMP/a.ksr

# sum of the counts of folded lines matching an awk regex on the stack part
fsum() { awk -v re="$2" '{ n = $NF; s = $0; sub(/ [0-9]+$/, "", s); if (s ~ re) t += n } END { print t + 0 }' "$1"; }

# rec OUT SECS: record syscalls and a 99 Hz profile of prof_qsort spinning in hot_spin for SECS; true when the
# stacks hold the workload's CPU time x HZ within 10% (its CPU time: "cpu NS" at its exit)
rec() {
	"$KSIGHT" record --collect syscalls -i 1 --profile -F $HZ -o "$1" -- "$W" "$2" >"$1.out" 2>"$1.err" || return 1
	"$KSIGHT" report "$1" --folded "$1.folded" 2>/dev/null || return 1
	WANT=$(awk '/^cpu/ { printf "%.0f\n", $2 / 1e9 * '$HZ' }' "$1.out")
	GOT=$(fsum "$1.folded" '.')
	awk -v n="$GOT" -v w="$WANT" 'BEGIN { d = n - w; if (d < 0) d = -d; exit !(w > 0 && d <= 0.1 * w) }'
}
# a second try when the count is off: on a loaded machine another task can run in step with the sampling timer
rec "$F" 2 || rec "$F" 2
t_ok "record --collect syscalls --profile -F $HZ -- prof_qsort 2: samples = CPU time x HZ within 10% (want $WANT, got $GOT)" \
	awk -v n="$GOT" -v w="$WANT" 'BEGIN { d = n - w; if (d < 0) d = -d; exit !(w > 0 && d <= 0.1 * w) }'
HOT=$(fsum "$F.folded" ';hot_spin($|;)')
t_ok "report --folded: hot_spin in most samples ($HOT of $GOT)" awk -v h="$HOT" -v n="$GOT" 'BEGIN { exit !(n > 0 && h >= 0.75 * n) }'
t_eq "report --folded: every stack rooted at the command's comm" "$GOT" "$(fsum "$F.folded" '^prof_qsort;')"
t_eq "the collector's reports are there too: report -j has the whole window of syscalls" "syscalls" \
	"$("$KSIGHT" report -j "$F" | jq -r .collector)"

# info: the stacks line, and -j's object
"$KSIGHT" info "$F" >"$T_TMP/info.txt"
t_ok "info: the stacks' samples" grep -qE "^stacks: $GOT samples \(count\) in [0-9]+ distinct stacks of [0-9]+ frames" "$T_TMP/info.txt"
t_eq "info -j: .stacks.total and no chunk refused" "$GOT 0" "$("$KSIGHT" info -j "$F" | jq -r '"\(.stacks.total) \(.stacks.refused_chunks)"')"

# the other writers: SVG that xmllint accepts, pprof that go tool pprof reads
"$KSIGHT" report "$F" --svg "$T_TMP/a.svg" --pprof "$T_TMP/a.pb.gz"
t_eq "report --svg --pprof: exit 0" "0" "$?"
t_ok "report --svg: well-formed XML" xmllint --noout "$T_TMP/a.svg"
t_ok "report --svg: hot_spin drawn" grep -q "hot_spin" "$T_TMP/a.svg"
if command -v go >/dev/null 2>&1; then
	first=$(HOME=${HOME:-/root} go tool pprof -top "$T_TMP/a.pb.gz" 2>/dev/null | awk 'f { print $NF; exit } /flat%/ { f = 1 }')
	t_eq "report --pprof: go tool pprof -top lists hot_spin first" "hot_spin" "$first"
else
	t_skip "report --pprof: go tool pprof" "go not installed (scripts/setup.sh installs golang-go)"
fi

# diff of two recordings: the differential flame graph from their stacks, then the reports compared
"$KSIGHT" record --collect syscalls -i 1 --profile -F $HZ -o "$T_TMP/b.ksr" -- "$W" 1 >/dev/null 2>&1
"$KSIGHT" diff "$F" "$T_TMP/b.ksr" --svg "$T_TMP/d.svg" >"$T_TMP/d.txt" 2>"$T_TMP/d.err"
t_eq "diff A B --svg: exit 0, nothing on stderr" "0 " "$? $(cat "$T_TMP/d.err")"
t_ok "diff --svg: a differential flame graph xmllint accepts" xmllint --noout "$T_TMP/d.svg"
t_ok "diff --svg: hot_spin in it" grep -q "hot_spin" "$T_TMP/d.svg"
t_ok "diff: the collectors' reports compared on stdout" grep -q "^A: $F syscalls" "$T_TMP/d.txt"
# --profile alone (no collector): the stacks diffed as folded profiles, against a recording or a folded file
"$KSIGHT" record --profile -F $HZ -o "$T_TMP/c.ksr" -- "$W" 1 >/dev/null 2>&1
t_eq "record --profile alone -- CMD: exit 0" "0" "$?"
"$KSIGHT" report "$T_TMP/c.ksr" >/dev/null 2>"$T_TMP/c.err"
t_eq "report of stacks alone: exit 0, one line saying how to write them" "0 1" "$? $(grep -c 'holds stacks (record --profile)' "$T_TMP/c.err")"
t_ok "diff of its stacks against A's: the folded comparison" grep -q "^A: $GOT samples" \
	"$("$KSIGHT" diff "$F" "$T_TMP/c.ksr" >"$T_TMP/dc.txt"; echo "$T_TMP/dc.txt")"
"$KSIGHT" diff "$F.folded" "$T_TMP/c.ksr" --svg "$T_TMP/dc.svg" >/dev/null
t_eq "diff FOLDED RECORDING --svg: exit 0" "0" "$?"

# bad usage: one line, exit 2, no file
for args in "--collect syscalls -F 99" "--profile -F 0" "--profile -F 20000" "--profile --call-graph dwarf" \
	"--collect syscalls --call-graph cfi" "--profile --rotate 1M"; do
	eval "\"\$KSIGHT\" record $args -o \"\$T_TMP/bad.ksr\" -d 1" >/dev/null 2>"$T_TMP/bad.err"
	t_eq "record $args: exit 2 in one line, no file" "2 1 no" \
		"$? $(wc -l <"$T_TMP/bad.err") $([ -e "$T_TMP/bad.ksr" ] && echo yes || echo no)"
done
"$KSIGHT" record --collect syscalls -d 0.2 -o "$T_TMP/np.ksr" >/dev/null 2>&1
"$KSIGHT" report "$T_TMP/np.ksr" --folded "$T_TMP/np.folded" 2>"$T_TMP/np.err"
t_eq "report --folded of a recording without --profile: exit 1 in one line" "1 1" "$? $(wc -l <"$T_TMP/np.err")"

# hostile stacks chunks (made from $F, their CRCs made right): report exits 2 in one line, info reads the rest
python3 tests/integration/rec_stacks_edit.py "$F" "$T_TMP/h" || t_fail "rec_stacks_edit" "the script failed"
for h in truncated trailing frame-id-out depth-huge name-long name-ctrl kind-odd total-off zlib-bomb zlib-garbage \
	version-2 type-odd no-end; do
	"$KSIGHT" report "$T_TMP/h/$h" --folded "$T_TMP/h.folded" >/dev/null 2>"$T_TMP/h.err"
	t_eq "hostile $h: report --folded exits 2 in one line" "2 1" "$? $(wc -l <"$T_TMP/h.err")"
	"$KSIGHT" info "$T_TMP/h/$h" >"$T_TMP/h.info" 2>&1
	t_eq "hostile $h: info exits 0 and says the chunk was refused" "0 1" "$? $(grep -c '^stacks: 1 chunks refused: ' "$T_TMP/h.info")"
	"$KSIGHT" diff "$F" "$T_TMP/h/$h" --svg "$T_TMP/h.svg" >/dev/null 2>"$T_TMP/h.err"
	t_eq "hostile $h: diff --svg exits 2 in one line" "2 1" "$? $(wc -l <"$T_TMP/h.err")"
done
# the first interval's stacks chunk with a bad CRC: skipped as damage, the other intervals' stacks shown with a warning
"$KSIGHT" report "$T_TMP/h/bad-crc" --folded "$T_TMP/h.folded" >/dev/null 2>"$T_TMP/h.err"
t_eq "damaged bad-crc: report --folded exits 0 with one line naming the damage" "0 1 1" \
	"$? $(wc -l <"$T_TMP/h.err") $(grep -c 'damaged or cut' "$T_TMP/h.err")"
t_in "damaged bad-crc: fewer samples than the $GOT recorded, some left" 1 $((GOT - 1)) "$(fsum "$T_TMP/h.folded" '.')"
# a file cut inside its first stacks chunk: no stacks, said in one line
"$KSIGHT" report "$T_TMP/h/cut" --folded "$T_TMP/h.folded" >/dev/null 2>"$T_TMP/h.err"
t_eq "cut: report --folded exits 1 in one line naming the damage" "1 1 1" \
	"$? $(wc -l <"$T_TMP/h.err") $(grep -c 'damaged or cut' "$T_TMP/h.err")"
for h in bad-crc cut; do
	"$KSIGHT" info "$T_TMP/h/$h" >/dev/null 2>&1
	t_eq "damaged $h: info exits 0" "0" "$?"
done

# crash-safe: each interval's stacks are a chunk, so a kill -9 keeps those already written
# (-p, not -- CMD: a command's cgroup would outlive the killed ksight)
"$W" 30 >"$T_TMP/k.out" &
QP=$!
"$KSIGHT" record --collect syscalls -i 0.5 --profile -F $HZ -p $QP -o "$T_TMP/k.ksr" >/dev/null 2>&1 &
KP=$!
T_CLEANUP="kill -9 $KP 2>/dev/null; kill $QP 2>/dev/null"
_i=0
until "$KSIGHT" info -j "$T_TMP/k.ksr" 2>/dev/null | jq -e '.stacks.total > 0' >/dev/null; do
	_i=$((_i + 1))
	[ $_i -gt $((T_WAIT * 20)) ] && break
	sleep 0.05
done
kill -9 $KP
wait $KP 2>/dev/null
kill $QP
wait $QP 2>/dev/null
"$KSIGHT" report "$T_TMP/k.ksr" --folded "$T_TMP/k.folded" 2>/dev/null
t_eq "kill -9: report --folded reads the intervals written (exit 0)" "0" "$?"
t_in "kill -9: their stacks hold hot_spin" 1 100000 "$(fsum "$T_TMP/k.folded" ';hot_spin($|;)')"
exit $T_FAILED
