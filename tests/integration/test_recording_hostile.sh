# Integration: recordings from strangers (issue 22): hostile formats, repeated and removed chunks, a FIFO; info, report and diff neither crash nor show the damage as data. No root.
. tests/lib.sh

# The reproducers are made from a real recording (the recfile fuzz seed, less its mode byte) by
# tests/fuzz/mkrepro.py, and are also committed in the fuzz corpus: both must agree.
SEED=tests/fuzz/corpus/recfile/seed2
tail -c +2 "$SEED" >"$T_TMP/a.ksr"
mkdir -p "$T_TMP/r" "$T_TMP/c"
python3 tests/fuzz/mkrepro.py "$T_TMP/a.ksr" "$T_TMP/r" || { t_fail "mkrepro" "the script failed"; exit 1; }
python3 tests/fuzz/mkrepro.py "$T_TMP/a.ksr" "$T_TMP/c" --corpus
same=0
for f in "$T_TMP/c"/repro-*; do cmp -s "$f" "tests/fuzz/corpus/recfile/${f##*/}" && same=$((same + 1)); done
t_eq "the committed corpus reproducers are what mkrepro.py makes" "7" "$same"

# The sanitized build when there is one (a finding aborts it), else $KSIGHT: a crash is a signal either way.
BIN=$KSIGHT
[ -z "${KSIGHT_SANITIZED:-}" ] && [ -x build-san/ksight ] && make -q san 2>/dev/null && BIN=build-san/ksight
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
echo "# binary: $BIN"

# h_run NAME ARGS...: exits 0, no sanitizer report, every stderr line a warning; stderr in $T_TMP/err
h_run() {
	_n=$1
	shift
	"$BIN" "$@" >"$T_TMP/out" 2>"$T_TMP/err"
	_rc=$?
	if [ $_rc -ne 0 ]; then
		t_fail "$_n" "'ksight $*' exited $_rc: $(grep -m 2 -E 'error|ERROR|runtime|signal' "$T_TMP/err" | tr '\n' ' ')"
	elif grep -qvE '^ksight: warning: ' "$T_TMP/err"; then
		t_fail "$_n" "'ksight $*': not a warning line: $(grep -m 1 -vE '^ksight: warning: ' "$T_TMP/err")"
	else
		t_pass "$_n"
	fi
}

for r in printflags-nofield common-type-2g offset-wrap size-intmax; do
	f=$T_TMP/r/repro-$r
	h_run "$r: info" info "$f"
	h_run "$r: info -j" info -j "$f"
	t_eq "$r: info -j says one format was refused" "1" "$(jq -r .bad_formats "$T_TMP/out")"
	h_run "$r: report" report "$f"
	t_eq "$r: report warns, in one line, which format and why" "1" \
		"$(grep -cE "^ksight: warning: .*1 event formats refused, their events left out \(sched:sched_[a-z_]+: (field|its print format)" "$T_TMP/err")"
	h_run "$r: report -j" report -j "$f"
	h_run "$r: report --csv" report --csv "$f"
	h_run "$r: diff" diff "$T_TMP/a.ksr" "$f"
done
# a print format that reads a byte range of a length from the format: its fields are printed raw
f=$T_TMP/r/repro-print-hex-100000
for c in "report" "report --csv" "info" "report -j"; do
	h_run "print-hex: $c" $c "$f"
done
"$BIN" report "$f" >"$T_TMP/out" 2>&1
t_eq "print-hex: the event's fields printed raw, as for a print format libtraceevent fails on" "1" \
	"$(grep -c 'sched_process_exec: \[FAILED TO PARSE\] filename=/usr/bin/true pid=[0-9]* old_pid=' "$T_TMP/out")"
# the other format of each file and its events are intact
t_eq "offset-wrap: the events of the other format are shown" \
	"$("$BIN" report -j "$T_TMP/a.ksr" | grep -c sched_switch)" "$("$BIN" report -j "$T_TMP/r/repro-offset-wrap" 2>/dev/null | grep -c sched_switch)"

n_a=$("$BIN" info -j "$T_TMP/a.ksr" | jq .events_total)
# a chunk repeated: its copy is left out, and said
h_run "chunk repeated: report" report -j "$T_TMP/r/repro-chunk-repeat"
t_eq "chunk repeated: each event once, the repeat said" "$n_a 1" \
	"$(wc -l <"$T_TMP/out") $(grep -c "1 chunks repeat an earlier chunk's sequence number (1 exact copies left out)" "$T_TMP/err")"
# a whole file twice (cat A A): the second header is damage, every chunk a repeat
cat "$T_TMP/a.ksr" "$T_TMP/a.ksr" >"$T_TMP/aa.ksr"
h_run "cat A A: info -j" info -j "$T_TMP/aa.ksr"
t_eq "cat A A: the trailer's count, every chunk repeated and left out, no mismatch" "$n_a $n_a 5 5 false" \
	"$(jq -r '"\(.events_total) \(.trailer_events) \(.seq_repeats) \(.repeats_dropped) \(.count_mismatch)"' "$T_TMP/out")"
# a chunk removed: a gap, and fewer events than the trailer counts
h_run "chunk removed: report" report "$T_TMP/r/repro-chunk-gap"
t_eq "chunk removed: the gap and the count mismatch are warned" "2" \
	"$(grep -cE "1 chunks missing by sequence number|the trailer counts $n_a events, the chunks hold 0" "$T_TMP/err")"
h_run "chunk removed: info -j" info -j "$T_TMP/r/repro-chunk-gap"
t_eq "chunk removed: info -j has the gap and the mismatch" "1 true $n_a 0" \
	"$(jq -r '"\(.seq_gaps) \(.count_mismatch) \(.trailer_events) \(.chunk_events)"' "$T_TMP/out")"

# a file cut in its trailer: info -j has an empty trailer object and no trailer count
head -c -10 "$T_TMP/a.ksr" >"$T_TMP/cut.ksr"
h_run "cut in the trailer: info -j" info -j "$T_TMP/cut.ksr"
t_eq "cut in the trailer: not closed, trailer {}, trailer_events null" "false {} null" \
	"$(jq -c -j '.closed, " ", .trailer, " ", .trailer_events' "$T_TMP/out")"

# info -j: valid JSON with unique keys (jq keeps the last of a repeated key; python can tell)
"$BIN" info -j "$T_TMP/a.ksr" >"$T_TMP/info.json"
t_eq "info -j: unique keys; event and arg lists are arrays" "ok 2" "$(python3 -c '
import json, sys
def hook(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        sys.exit("repeated keys: %s" % sorted(k for k in keys if keys.count(k) > 1))
    return dict(pairs)
d = json.load(open(sys.argv[1]), object_pairs_hook=hook)
print("ok", len(d["manifest"]["event"]) if isinstance(d["manifest"]["event"], list) else "string")' "$T_TMP/info.json" 2>&1)"

# a FIFO: refused at once, not waited on for a writer
mkfifo "$T_TMP/fifo"
timeout 5 "$BIN" info "$T_TMP/fifo" >"$T_TMP/out" 2>"$T_TMP/err"
t_eq "FIFO: one error line, exit 1, no wait" "1 1" "$? $(grep -c "^ksight: error: cannot read '.*fifo': not a regular file$" "$T_TMP/err")"
