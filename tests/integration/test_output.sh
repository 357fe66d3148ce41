# Integration: output robustness (issue 10 #10-#12, #14): blocked output and signals, escaping, write errors, -o safety, -p exit, timestamps, --sort.
. tests/lib.sh
need_root output

before=$T_TMP/orphans.before
t_orphans >"$before"

# --- #10: a SIGTERM ends a run whose reader stopped reading, promptly, and nothing stays attached
t_name blocked
fifo=$T_NAME.fifo
mkfifo "$fifo"
# the reader opens the pipe and never reads: the pipe fills within a few intervals
sleep 30 <"$fifo" & reader=$!
# filled before ksight writes (interval reports alone take seconds to fill 64 KiB on a loaded machine)
timeout 5 head -c 65536 /dev/zero >"$fifo"
"$KSIGHT" syscalls -i 0.01 -n 0 >"$fifo" 2>"$T_NAME.err" & kp=$!
t_wait_for "$T_NAME.err" tracing || t_fail "blocked output: start" "$(cat "$T_NAME.err")"
sleep 1.5 # the pipe (64 KiB) is full well before this
t0=$(date +%s%N)
kill -TERM $kp
i=0
while kill -0 $kp 2>/dev/null && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
t1=$(date +%s%N)
ms=$(((t1 - t0) / 1000000))
if kill -0 $kp 2>/dev/null; then
	t_fail "blocked output: SIGTERM ends the run" "still running after ${ms} ms"
	kill -KILL $kp
else
	[ $ms -le 1500 ] && t_pass "blocked output: SIGTERM ends the run (${ms} ms)" ||
		t_fail "blocked output: SIGTERM ends the run" "took ${ms} ms"
fi
wait $kp 2>/dev/null
t_ok "blocked output: says the report was abandoned" grep -q "abandoned: the output is not being read" "$T_NAME.err"
kill $reader 2>/dev/null
wait $reader 2>/dev/null
t_no_leaks "blocked output: no BPF programs left" "$before"

# --- #11: a task that names itself with ESC and a newline cannot forge lines in text output
name=$(printf '\033[31m\nFAKE')
w_start -n 200 -c "$name"
k_start syscalls --by comm -p "$W_PID"
w_go
k_stop
if grep -q "$(printf '\033')" "$K_OUT"; then
	t_fail "escaped names: no raw ESC in text output" "$(cat -v "$K_OUT" | head -3)"
else
	t_pass "escaped names: no raw ESC in text output"
fi
t_ok "escaped names: shown as \\x1b[31m\\x0aFAKE" grep -qF '\x1b[31m\x0aFAKE' "$K_OUT"
t_eq "escaped names: no line starts with FAKE" "0" "$(grep -c '^FAKE' "$K_OUT")"
w_start -n 200 -c "$name"
k_start syscalls --by comm -p "$W_PID" -j
w_go
k_stop
# JSON shows the name as the text table does: the one sanitizer of docs/names.md, then JSON's quoting
t_eq "escaped names: JSON shows the name sanitized, as text output does" "1" \
	"$(k_jq '[.rows[] | select(.comm == "\\x1b[31m\\x0aFAKE")] | length')"

# --- #12: write errors keep their errno
"$KSIGHT" syscalls -d 0.2 >/dev/full 2>"$T_TMP/full.err"
rc=$?
t_eq "/dev/full: exit 1" 1 "$rc"
t_ok "/dev/full: says no space left" grep -q "No space left on device" "$T_TMP/full.err"
"$KSIGHT" syscalls -d 0.2 -o /dev/full 2>"$T_TMP/full2.err"
t_ok "-o /dev/full: says no space left" grep -q "No space left on device" "$T_TMP/full2.err"
"$KSIGHT" syscalls -d 0.2 >&- 2>"$T_TMP/closed.err"
t_ok "closed stdout: says bad file descriptor" grep -q "Bad file descriptor" "$T_TMP/closed.err"

# -i: each write is judged alone (every interval onto /dev/full says ENOSPC once; a good stream gets every interval)
"$KSIGHT" syscalls -i 0.1 -d 0.55 -j -o "$T_TMP/iv.json" 2>/dev/null
n=$(wc -l <"$T_TMP/iv.json")
[ "$n" -ge 4 ] && t_pass "-i: one report per interval plus the final ($n)" || t_fail "-i: reports" "only $n"
t_eq "-i: each JSON report has a time" "true" \
	"$(jq -s 'all(.time.wall | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z$")) and (map(.time.monotonic_ns) | . == sort)' "$T_TMP/iv.json")"
t_eq "-i: counters always present" "true" "$(jq -s 'all(.counters | type == "object")' "$T_TMP/iv.json")"
"$KSIGHT" syscalls -i 0.1 -d 0.35 -o "$T_TMP/iv.txt" 2>/dev/null
t_eq "-i: every text report's header carries a timestamp" "$(grep -c '^lost:' "$T_TMP/iv.txt")" \
	"$(grep -cE '^--- interval [0-9]+ \([0-9.]+s\) [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z ---$' "$T_TMP/iv.txt")"
n=$("$KSIGHT" syscalls -i 0.1 -d 0.45 2>&1 >/dev/full | grep -c "No space left")
[ "$n" -ge 3 ] && t_pass "-i onto /dev/full: every interval reports its own ENOSPC ($n)" ||
	t_fail "-i onto /dev/full: every interval reports its own ENOSPC" "$n lines"

# -o: 0600, no symlinks, a failed load leaves the old file
out=$T_TMP/report.txt
(umask 0; "$KSIGHT" syscalls -d 0.1 -o "$out" 2>/dev/null)
t_eq "-o: new file mode 0600" "600" "$(stat -c %a "$out")"
ln -s "$out" "$T_TMP/link"
"$KSIGHT" syscalls -d 0.1 -o "$T_TMP/link" 2>"$T_TMP/link.err"
rc=$?
t_eq "-o onto a symlink: refused with exit 2" 2 "$rc"
t_ok "-o onto a symlink: says so" grep -q "symbolic link" "$T_TMP/link.err"
# a load that fails: an unprivileged user cannot load BPF programs (the file is theirs to write)
if ! command -v setpriv >/dev/null; then
	t_skip "-o: failed load leaves the file" "no setpriv"
else
	od=$T_TMP/odir
	mkdir "$od" && chmod 777 "$od" && chmod 755 "$T_TMP"
	echo "keep me" >"$od/old.txt" && chmod 666 "$od/old.txt"
	setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
		"$KSIGHT" syscalls -d 0.1 -o "$od/old.txt" 2>"$T_TMP/old.err"
	rc=$?
	t_eq "-o: failed load exits 1" 1 "$rc"
	t_eq "-o: failed load leaves the old file untouched" "keep me" "$(cat "$od/old.txt")"
	setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
		"$KSIGHT" syscalls -d 0.1 -o "$od/new.txt" 2>/dev/null
	t_eq "-o: failed load leaves no new file" "no" "$([ -e "$od/new.txt" ] && echo yes || echo no)"
fi

# --- -p ends the run when the process exits, with the final report
w_start -n 5000
"$KSIGHT" syscalls -p "$W_PID" -j >"$T_TMP/p.json" 2>"$T_TMP/p.err" & kp=$!
t_wait_for "$T_TMP/p.err" tracing
w_go
i=0
while kill -0 $kp 2>/dev/null && [ $i -lt 60 ]; do sleep 0.05; i=$((i + 1)); done
if kill -0 $kp 2>/dev/null; then
	t_fail "-p: the run ends when the process exits" "still running"
	kill -INT $kp
fi
wait $kp
t_eq "-p: exit 0 and the final report counts every call" "5000" \
	"$(jq '(.rows[] | select(.syscall=="getppid") | .count) // 0' "$T_TMP/p.json")"

# --- --sort: any column, and an unknown one refused
w_start -n 3000 -e 50
k_start syscalls -p "$W_PID" -j --sort errors -n 1
w_go
k_stop
t_eq "--sort errors: close first" "close" "$(k_jq '.rows[0].syscall')"
# a workload's calls make rows to sort: a report without rows has no columns to check the key against
w_start -n 3000 -e 50
k_start syscalls -p "$W_PID" --sort no_such_column
w_go
k_stop
rc=$?
cp "$K_ERR" "$T_TMP/sort.err"
t_eq "--sort unknown column: exit 2" "2" "$rc"
t_ok "--sort unknown column: says which" grep -q "invalid --sort key 'no_such_column'" "$T_TMP/sort.err"
# with no rows at all it is refused too, before anything attaches: the collectors declare their columns
for col in syscalls biolat runqlat offcpu mem tcp; do
	rm -f "$T_TMP/nosort.out"
	"$KSIGHT" $col -d 0.2 --sort no_such_column -o "$T_TMP/nosort.out" >/dev/null 2>"$T_TMP/nosort.err"
	rc=$?
	t_eq "$col: --sort unknown column, no rows: exit 2 before attaching" "2 no" \
		"$rc $(grep -q 'ksight: tracing' "$T_TMP/nosort.err" && echo yes || echo no)"
	t_ok "$col: --sort unknown column, no rows: says which" grep -q "invalid --sort key 'no_such_column'" "$T_TMP/nosort.err"
	t_ok "$col: --sort unknown column: no output file" test ! -e "$T_TMP/nosort.out"
done
# a key column of the collector's rows is still taken
"$KSIGHT" runqlat -d 0.2 --by cpu --sort cpu >/dev/null 2>"$T_TMP/sortcpu.err"
t_eq "runqlat --by cpu --sort cpu: exit 0" "0" "$?"

t_no_leaks "output: no BPF programs left" "$before"
exit $T_FAILED
