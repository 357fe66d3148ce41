# Integration: record --collect runs collectors inside a recording: exact counts of a -- CMD's syscalls over the whole window and summed over its intervals, the same as `ksight syscalls -- CMD`; a kill -9 keeps the intervals written; --note round-trips escaped; info, rerun, diff --fail-on; hostile report chunks refused in one line.
. tests/lib.sh
need_root record_collect

CC=$WORKLOADS/cmd_calls
N=1000
M=300
# the command's getppid calls: N of its own, M of a child and M of a grandchild
ALL=$((N + 2 * M))
F=$T_TMP/c.ksr
getppid() { jq -s '[.[] | [.rows[] | select(.syscall == "getppid") | .count] | add // 0] | add' "$1"; }

# 1. exact counts: the whole window, the intervals' sum, and the collector run alone
"$KSIGHT" record --collect syscalls -i 0.5 --note 'p99 of getppid?' -o "$F" -- "$CC" $N $M 0 1200 2>"$T_TMP/rec.err"
t_eq "record --collect -- CMD: exit 0" "0" "$?"
"$KSIGHT" report -j "$F" >"$T_TMP/total.json" 2>"$T_TMP/rep.err"
t_eq "report -j: one whole-window report, of syscalls, interval 0" "1 syscalls 0" \
	"$(jq -s -r '"\(length) \(.[0].collector) \(.[0].interval)"' "$T_TMP/total.json")"
t_eq "report -j: exactly the $ALL getppid of the command" "$ALL" "$(getppid "$T_TMP/total.json")"
"$KSIGHT" report -j --intervals "$F" >"$T_TMP/iv.json"
nint=$(jq -s length "$T_TMP/iv.json")
t_in "report --intervals: 2 or more intervals of 0.5 s over the 1.2 s command" 2 6 "$nint"
t_eq "report --intervals: numbered 1..$nint" "$(seq -s ' ' 1 "$nint")" "$(jq -s -r '[.[].interval] | join(" ")' "$T_TMP/iv.json")"
t_eq "report --intervals: their sum is the total, $ALL" "$ALL" "$(getppid "$T_TMP/iv.json")"
t_eq "report --intervals: every syscall's count sums to the total's" \
	"$(jq -S -c '[.rows[] | {(.syscall): .count}] | add' "$T_TMP/total.json")" \
	"$(jq -S -s -c '[.[].rows[]] | group_by(.syscall) | map({(.[0].syscall): (map(.count) | add)}) | add' "$T_TMP/iv.json")"
"$KSIGHT" syscalls -n 0 -j -o "$T_TMP/alone.json" -- "$CC" $N $M 0 2>/dev/null
t_eq "the same as 'ksight syscalls -- CMD' counts" "$(getppid "$T_TMP/alone.json")" "$(getppid "$T_TMP/total.json")"
t_ok "report (text): the collector's table with getppid's row" grep -qE "^getppid +110 +$ALL " \
	"$("$KSIGHT" report "$F" >"$T_TMP/total.txt"; echo "$T_TMP/total.txt")"
t_eq "report: nothing on stderr" "" "$(cat "$T_TMP/rep.err")"

# 2. info: the collectors, their intervals, losses and cost, and the note
"$KSIGHT" info -j "$F" >"$T_TMP/info.json"
t_eq "info -j: syscalls, $nint intervals, a whole-window report, 0 lost" "syscalls $nint true 0" \
	"$(jq -r '.collectors[0] | "\(.collector) \(.intervals) \(.whole_window) \(.lost)"' "$T_TMP/info.json")"
t_eq "info -j: the note and the collectors in the manifest" "p99 of getppid?|syscalls|0.5" \
	"$(jq -r '.manifest | "\(.note)|\(.collect)|\(.["collect.interval_s"])"' "$T_TMP/info.json")"
t_eq "info -j: ksight's own CPU over the intervals, > 0 and < 1.2 s" "true" "$(jq '.ksight_cpu_us > 0 and .ksight_cpu_us < 1200000' "$T_TMP/info.json")"
# the BPF cost is read, never turned on here (kernel.bpf_stats_enabled is the machine's)
if [ "$(jq -r '.collectors[0].bpf_stats' "$T_TMP/info.json")" = true ]; then
	t_in "info -j: the BPF runs, at least one per getppid of the command" $ALL 100000000 \
		"$(jq '.collectors[0].bpf_run_cnt' "$T_TMP/info.json")"
else
	t_skip "info -j: BPF runs" "kernel.bpf_stats_enabled was 0 during the recording"
fi
"$KSIGHT" info "$F" >"$T_TMP/info.txt"
t_ok "info: the collector's line" grep -qE "^  syscalls +$nint intervals over [0-9.]+ s, 0 lost; BPF " "$T_TMP/info.txt"
t_ok "info: ksight's own CPU" grep -qE "^  ksight's own CPU [0-9.]+ s over the intervals" "$T_TMP/info.txt"

# 3. a hostile note: escaped in text, exact in JSON
note=$(printf 'a\033[31mred\tb\nc\\d')
"$KSIGHT" record --collect runqlat -d 0.3 --note "$note" -o "$T_TMP/n.ksr" 2>/dev/null
t_eq "record --collect runqlat -d (no -i, no command): exit 0" "0" "$?"
# JSON strings from a stranger's file carry control bytes and backslashes as \xNN and \\ (as every manifest value)
t_eq "--note: the JSON holds the bytes given, escaped" 'a\x1b[31mred\x09b\x0ac\\d' \
	"$("$KSIGHT" info -j "$T_TMP/n.ksr" | jq -r '.manifest.note')"
"$KSIGHT" info "$T_TMP/n.ksr" >"$T_TMP/n.txt"
t_eq "--note: no ESC byte reaches the text" "0" "$(tr -cd '\033' <"$T_TMP/n.txt" | wc -c)"
t_eq "--note: the text on one line" "1" "$(grep -c '^  note ' "$T_TMP/n.txt")"
t_eq "runqlat: a whole-window report" "runqlat" "$("$KSIGHT" report -j "$T_TMP/n.ksr" | jq -r .collector)"

# 4. rerun: the same collectors and settings, the command again
"$KSIGHT" rerun "$F" -o "$T_TMP/r.ksr" 2>/dev/null
t_eq "rerun: exit 0, the same note and collectors" "0 p99 of getppid?|syscalls|0.5" \
	"$? $("$KSIGHT" info -j "$T_TMP/r.ksr" | jq -r '.manifest | "\(.note)|\(.collect)|\(.["collect.interval_s"])"')"
t_eq "rerun: exactly the $ALL getppid again" "$ALL" "$("$KSIGHT" report -j "$T_TMP/r.ksr" | getppid /dev/stdin)"

# 5. diff of two recordings: their reports compared, --fail-on gates
"$KSIGHT" record --collect syscalls -i 0.5 -o "$T_TMP/b.ksr" -- "$CC" $((N * 3)) $M 0 2>/dev/null
"$KSIGHT" diff -j "$F" "$T_TMP/b.ksr" >"$T_TMP/d.json"
t_eq "diff: exit 0 without gates" "0" "$?"
"$KSIGHT" diff "$F" "$T_TMP/r.ksr" --fail-on 'syscalls:syscall=getppid.count>+10%' >/dev/null 2>&1
t_eq "diff --fail-on: A/A (the rerun) does not fire" "0" "$?"
"$KSIGHT" diff "$F" "$T_TMP/b.ksr" --fail-on 'syscalls:syscall=getppid.count>+10%' >/dev/null 2>"$T_TMP/d.err"
t_eq "diff --fail-on: $ALL -> $((3 * N + 2 * M)) getppid fires (exit 1)" "1" "$?"
t_ok "diff --fail-on: says the counts" grep -q "count $ALL -> $((3 * N + 2 * M))" "$T_TMP/d.err"

# 5b. events and collectors in one recording: report shows both, diff --pair compares the events
"$KSIGHT" record --collect runqlat -i 0.5 -e raw_syscalls:sys_enter -e raw_syscalls:sys_exit --filter 'id == 110' \
	-o "$T_TMP/e.ksr" -- "$CC" $N $M 0 2>/dev/null
"$KSIGHT" report -j "$T_TMP/e.ksr" >"$T_TMP/e.json"
t_eq "events and --collect: report -j has the $((2 * ALL)) getppid events, then runqlat's whole window" \
	"$((2 * ALL)) runqlat" "$(grep -c '"event":"raw_syscalls:sys_e' "$T_TMP/e.json") $(tail -1 "$T_TMP/e.json" | jq -r .collector)"
"$KSIGHT" diff -j "$T_TMP/e.ksr" "$T_TMP/e.ksr" --pair raw_syscalls:sys_enter/raw_syscalls:sys_exit --key common_pid >"$T_TMP/ep.json" 2>&1
t_eq "events and --collect: diff --pair compares the events ($ALL pairs a side)" "0 $ALL" \
	"$? $(jq '.pairs[0].a.count' "$T_TMP/ep.json" 2>/dev/null)"

# 6. kill -9 mid-run: the intervals written so far are read back
"$KSIGHT" record --collect syscalls -i 0.2 -d 30 -o "$T_TMP/k.ksr" 2>"$T_TMP/k.err" &
KP=$!
T_CLEANUP='kill -9 $KP 2>/dev/null'
i=0
while [ "$("$KSIGHT" info -j "$T_TMP/k.ksr" 2>/dev/null | jq '.collectors[0].intervals // 0')" -lt 3 ] 2>/dev/null; do
	i=$((i + 1))
	[ $i -gt 600 ] && break
	sleep 0.05
done
kill -9 $KP
wait $KP 2>/dev/null
"$KSIGHT" info -j "$T_TMP/k.ksr" >"$T_TMP/k.json" 2>/dev/null
kn=$(jq '.collectors[0].intervals' "$T_TMP/k.json")
t_in "kill -9: 3 or more intervals kept" 3 1000 "$kn"
t_eq "kill -9: not closed, no whole-window report" "false false" "$(jq -r '"\(.closed) \(.collectors[0].whole_window)"' "$T_TMP/k.json")"
"$KSIGHT" report -j --intervals "$T_TMP/k.ksr" >"$T_TMP/k.iv" 2>/dev/null
t_eq "kill -9: report --intervals reads each of them" "$kn 0" "$(jq -s length "$T_TMP/k.iv") $?"
"$KSIGHT" report -j "$T_TMP/k.ksr" >"$T_TMP/k.tot" 2>"$T_TMP/k.err2"
t_eq "kill -9: report -j shows the intervals, saying why" "$kn 1" \
	"$(jq -s length "$T_TMP/k.tot") $(grep -c 'no whole-window report' "$T_TMP/k.err2")"

# 7. bad usage: one line, exit 2, nothing written
for args in "--collect nosuch" "--collect syscalls,syscalls" "--collect funclat" "-i 1 -e sched:sched_switch" \
	"--collect syscalls --flight 4M --trigger 'id == 1'" "--collect syscalls --rotate 1M"; do
	eval "\"\$KSIGHT\" record $args -o \"\$T_TMP/bad.ksr\" -d 1" >/dev/null 2>"$T_TMP/bad.err"
	t_eq "record $args: exit 2 in one line, no file" "2 1 no" \
		"$? $(wc -l <"$T_TMP/bad.err") $([ -e "$T_TMP/bad.ksr" ] && echo yes || echo no)"
done

# 8. hostile report chunks (reproducers made from $F, their CRCs made right): one line, exit 2
python3 tests/integration/rec_report_edit.py "$F" "$T_TMP/h" || t_fail "rec_report_edit" "the script failed"
for h in lengths-over lengths-short ctrl-byte kind-odd no-end zlib-bomb zlib-garbage zlib-len-off; do
	"$KSIGHT" report "$T_TMP/h/$h" >/dev/null 2>"$T_TMP/h.err"
	t_eq "hostile $h: report exits 2 in one line" "2 1" "$? $(wc -l <"$T_TMP/h.err")"
	"$KSIGHT" info "$T_TMP/h/$h" >/dev/null 2>&1
	t_eq "hostile $h: info still reads it (exit 0)" "0" "$?"
	"$KSIGHT" diff "$F" "$T_TMP/h/$h" >/dev/null 2>"$T_TMP/h.err"
	t_eq "hostile $h: diff exits 2 in one line" "2 1" "$? $(wc -l <"$T_TMP/h.err")"
done
# a chunk whose reports are not deflated (zlib_len absent) is read as it is: the same counts
t_eq "a report chunk stored plain: the intervals still sum to $ALL" "$ALL" \
	"$("$KSIGHT" report -j --intervals "$T_TMP/h/plain" | getppid /dev/stdin)"
# a report chunk with a bad CRC is skipped and counted, as every chunk: the other intervals are read
"$KSIGHT" report -j --intervals "$T_TMP/h/bad-crc" >"$T_TMP/h.out" 2>"$T_TMP/h.err"
t_eq "bad CRC: the chunk skipped with a warning, the other $((nint - 1)) intervals shown" "0 $((nint - 1)) 1" \
	"$? $(jq -s length "$T_TMP/h.out") $(grep -c 'damaged chunks' "$T_TMP/h.err")"
exit $T_FAILED
