# Integration: report --trace-dat writes a trace.dat that trace-cmd report reads with the events of `ksight report` (count per type, ns timestamps, CPUs, pids, fields), 0600, comm bytes as they are, --anonymize honoured.
. tests/lib.sh
need_root tracedat
command -v trace-cmd >/dev/null 2>&1 || { t_skip tracedat "no trace-cmd (scripts/setup.sh installs it)"; exit 0; }

# a workload of its own: a comm of hostile bytes (ESC, a Latin-1 byte, a control byte), 40 sleeps (switches) and
# syscalls; one sleep of 0.2 s (a gap past the 27 bits of a ring-buffer event's time delta: a time-extend record);
# an exec through a 150-byte path (a sched_process_exec record past 112 bytes: its length in a word of its own)
COMM='ev\x1b[1m\xc9l\x01'
# the same bytes for the shell's printf (octal: dash's has no \x)
COMM_SH=$(printf 'ev\033[1m\311l\001')
# the system's interpreter, not a version manager's shim that execs its own chain of processes
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
EV="-e sched:sched_switch -e raw_syscalls:sys_enter -e raw_syscalls:sys_exit -e sched:sched_process_exec"
LONG=$T_TMP/$(printf '%0150d' 0 | tr 0 d)
mkdir "$LONG" && ln -s /bin/true "$LONG/t"
# shellcheck disable=SC2086
"$KSIGHT" record $EV -o "$T_TMP/r.ksr" -- "$PY" -c "
import time
open('/proc/self/comm', 'wb').write(b'$COMM')
for i in range(40): time.sleep(0.002)
time.sleep(0.2)
import subprocess; subprocess.run(['$LONG/t'])
" 2>"$T_TMP/rec.err"
t_eq "record -- CMD: exit 0" "0" "$?"

# 1. the same events in both readers
"$KSIGHT" report "$T_TMP/r.ksr" --trace-dat "$T_TMP/o.dat" -o "$T_TMP/r.txt"
t_eq "report --trace-dat: exit 0" "0" "$?"
t_eq "report --trace-dat: the file is 0600" "600" "$(stat -c %a "$T_TMP/o.dat")"
"$KSIGHT" report -j "$T_TMP/r.ksr" >"$T_TMP/r.jsonl"
trace-cmd report -R -t "$T_TMP/o.dat" >"$T_TMP/o.txt" 2>"$T_TMP/o.err"
t_eq "trace-cmd report: exit 0" "0" "$?"
t_eq "trace-cmd report: no complaint" "" "$(grep -v '^cpus=' "$T_TMP/o.err")"
t_ok "the workload's sched_switch events are there (the test's premise)" \
	[ "$(grep -c '"event":"sched:sched_switch"' "$T_TMP/r.jsonl")" -ge 40 ]
t_ok "its exec through the long path is there (the test's premise)" grep -q "\"filename\":\"$LONG/t\"" "$T_TMP/r.jsonl"
out=$(python3 tests/integration/tracedat_cmp.py "$T_TMP/r.jsonl" "$T_TMP/o.txt")
t_eq "trace-cmd report: the events of ksight report, ns timestamps, CPUs, pids, fields ($(echo "$out" | head -1))" \
	"0" "$?"
[ "$T_FAILED" = 1 ] && echo "$out"
# the comm column comes from the file's saved_cmdlines: the workload's bytes as they are
trace-cmd report "$T_TMP/o.dat" >"$T_TMP/plain.txt" 2>/dev/null
t_ok "trace-cmd report: the hostile comm's bytes as they are in the comm column" \
	[ "$(LC_ALL=C grep -c -a -F " $COMM_SH-" "$T_TMP/plain.txt")" -gt 0 ]

# 2. --anonymize: the anonymized events, not the raw ones
"$KSIGHT" report "$T_TMP/r.ksr" --anonymize-key k1 --trace-dat "$T_TMP/a.dat" -o /dev/null
t_eq "report --anonymize-key --trace-dat: exit 0" "0" "$?"
"$KSIGHT" report -j --anonymize-key k1 "$T_TMP/r.ksr" >"$T_TMP/a.jsonl"
trace-cmd report -R -t "$T_TMP/a.dat" >"$T_TMP/a.txt" 2>/dev/null
t_ok "--anonymize: trace-cmd reads the anonymized events of report -j --anonymize" \
	python3 tests/integration/tracedat_cmp.py "$T_TMP/a.jsonl" "$T_TMP/a.txt"
t_ok "plain: the workload's comm is in the file (the next check's premise)" \
	[ "$(LC_ALL=C grep -c -a -F -e "$COMM_SH" "$T_TMP/o.dat")" -gt 0 ]
t_eq "--anonymize: no comm of the workload in the file" "0" \
	"$(LC_ALL=C grep -c -a -F -e "$COMM_SH" -e python3 "$T_TMP/a.dat")"

# 3. standard output, refusals
"$KSIGHT" report "$T_TMP/r.ksr" --trace-dat - -o "$T_TMP/r2.txt" >"$T_TMP/s.dat"
t_eq "--trace-dat - with -o FILE: exit 0" "0" "$?"
t_eq "--trace-dat -: the same file on standard output" "$(md5sum <"$T_TMP/o.dat")" "$(md5sum <"$T_TMP/s.dat")"
"$KSIGHT" report "$T_TMP/r.ksr" --trace-dat - >/dev/null 2>"$T_TMP/e1"
t_eq "--trace-dat - with the report on standard output: exit 2" "2" "$?"
t_eq "--trace-dat -: one line" "1" "$(wc -l <"$T_TMP/e1")"
ln -s "$T_TMP/target" "$T_TMP/link.dat"
"$KSIGHT" report "$T_TMP/r.ksr" --trace-dat "$T_TMP/link.dat" -o /dev/null 2>"$T_TMP/e2"
t_eq "--trace-dat on a symbolic link: exit 1" "1" "$?"
t_ok "--trace-dat on a symbolic link: nothing written through it" [ ! -e "$T_TMP/target" ]
"$KSIGHT" report "$T_TMP/r.ksr" --html "$T_TMP/p.html" --trace-dat "$T_TMP/h.dat" 2>"$T_TMP/e3"
t_eq "--html with --trace-dat: exit 2, nothing written" "2 no" "$? $([ -e "$T_TMP/h.dat" ] && echo yes || echo no)"

"$KSIGHT" report "$T_TMP/r.ksr" --folded "$T_TMP/f.txt" --trace-dat "$T_TMP/f.dat" 2>"$T_TMP/e4"
t_eq "--folded with --trace-dat: exit 2, one line, nothing written" "2 1 no" \
	"$? $(wc -l <"$T_TMP/e4") $([ -e "$T_TMP/f.dat" ] && echo yes || echo no)"

exit $T_FAILED
