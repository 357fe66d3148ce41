# Integration: `ksight run` runs several collectors in one process, one report each, with the same exact counts as alone.
. tests/lib.sh
need_root run

N=20000
M=300

before=$T_TMP/orphans.before
t_orphans >"$before"

getppid_of() {
	jq -r 'select(.collector == "syscalls") | [(.rows[] | select(.syscall=="getppid") | .count) // 0,
	       (.rows[] | select(.syscall=="close") | .errors) // 0] | map(tostring) | join(" ")' "$1"
}

# alone
w_start -n $N -e $M
k_start syscalls -p "$W_PID" -j
w_go
k_stop
t_eq "syscalls alone: exact getppid and close errors" "$N $M" "$(getppid_of "$K_OUT")"

# together with runqlat (and biolat): the same exact counts, one report each
w_start -n $N -e $M
k_start run syscalls,runqlat,biolat -p "$W_PID" -j
w_go
k_stop
rc=$?
t_eq "run: exit 0" 0 "$rc"
t_eq "run: one report per collector" "biolat runqlat syscalls" "$(jq -r .collector "$K_OUT" | sort | tr '\n' ' ' | sed 's/ $//')"
t_eq "run syscalls,runqlat,biolat: exact getppid and close errors" "$N $M" "$(getppid_of "$K_OUT")"
t_eq "run: each report names its filter" "$W_PID $W_PID $W_PID" "$(jq -r '.filters.pid' "$K_OUT" | tr '\n' ' ' | sed 's/ $//')"
t_eq "run: three tracing lines" 3 "$(grep -c '^ksight: tracing' "$K_ERR")"

# -i: every interval has one report of each
w_start -n $N
"$KSIGHT" run --collectors syscalls,runqlat -p "$W_PID" -i 0.2 -j >"$T_TMP/iv.json" 2>"$T_TMP/iv.err" & kp=$!
t_wait_for "$T_TMP/iv.err" "tracing runqlat"
sleep 0.5
w_go
wait $kp
rc=$?
t_eq "run -i: ends with the -p process, exit 0" 0 "$rc"
t_eq "run -i: each interval has one report per collector" "true" \
	"$(jq -s 'group_by(.interval) | all(map(.collector) | sort == ["runqlat","syscalls"])' "$T_TMP/iv.json")"
t_eq "run -i: the intervals sum to the exact count" "$N" \
	"$(jq -s '[.[] | select(.collector=="syscalls") | .rows[] | select(.syscall=="getppid") | .count] | add' "$T_TMP/iv.json")"

# text: each report says whose it is
"$KSIGHT" run syscalls runqlat -d 0.3 >"$T_TMP/t.txt" 2>/dev/null
t_eq "run text: a header per collector" "=== syscalls ===,=== runqlat ===" "$(grep '^===' "$T_TMP/t.txt" | paste -sd,)"

# bad input: one line, exit 2, nothing loaded
"$KSIGHT" run nosuch,syscalls -d 0.1 >"$T_TMP/b.out" 2>"$T_TMP/b.err"
t_eq "run: unknown collector exits 2" 2 "$?"
t_eq "run: unknown collector, one error line" "ksight: error: run: unknown collector 'nosuch'; see 'ksight -h'" "$(cat "$T_TMP/b.err")"
# a name with a terminal escape in it comes back escaped, as serve's always did (one set-up for both)
"$KSIGHT" run "$(printf 'no\033[31msuch')" -d 0.1 >/dev/null 2>"$T_TMP/b.err"
t_eq "run: unknown collector with an escape exits 2" 2 "$?"
t_eq "run: an unknown collector's escape is shown, not sent to the terminal" \
	"ksight: error: run: unknown collector 'no\\x1b[31msuch'; see 'ksight -h'" "$(cat "$T_TMP/b.err")"
"$KSIGHT" run -d 0.1 >/dev/null 2>"$T_TMP/b.err"
t_eq "run: no collector exits 2" 2 "$?"
"$KSIGHT" run syscalls,syscalls -d 0.1 >/dev/null 2>"$T_TMP/b.err"
t_eq "run: a collector twice exits 2" 2 "$?"

# funclat: its targets by --funclat, its report beside syscalls' with exactly the N calls the
# workload makes after SIGUSR1 (and syscalls sees their N nanosleeps)
FW=$WORKLOADS/fl_calls
FN=200
if g_start "$T_TMP/fl" "$FW" $FN 200 && k_start run syscalls --funclat "$FW:fl_sleep" -p "$G_PID" -j; then
	kill -USR1 "$G_PID"
	t_wait_for "$G_FILE" "^done"
	kill -USR1 "$G_PID"
	wait "$G_PID"
	wait "$K_PID"
	t_eq "run --funclat: ends with the -p process, exit 0" 0 "$?"
	t_eq "run --funclat: one report each, funclat added" "funclat syscalls" \
		"$(jq -r .collector "$K_OUT" | sort | tr '\n' ' ' | sed 's/ $//')"
	t_eq "run --funclat: exactly $FN fl_sleep calls, each timed" "$FN $FN" \
		"$(jq -r 'select(.collector == "funclat") | .rows[] | select(.function == "fl_sleep") | "\(.count) \(.latency_ns.count)"' "$K_OUT")"
	t_eq "run --funclat: syscalls' report has the $FN nanosleeps" "$FN" \
		"$(jq -r 'select(.collector == "syscalls") | (.rows[] | select(.syscall == "clock_nanosleep") | .count) // 0' "$K_OUT")"
	t_eq "run --funclat: a tracing line each" 2 "$(grep -c '^ksight: tracing' "$K_ERR")"
else
	t_fail "run --funclat" "did not start: $(cat "$K_ERR" 2>/dev/null)"
	kill "$G_PID" 2>/dev/null
fi
# its bad input: one line, exit 2, nothing loaded (t_no_leaks below)
"$KSIGHT" run syscalls --funclat "$FW:no_such_function" -d 0.1 >/dev/null 2>"$T_TMP/b.err"
t_eq "run --funclat: a target matching nothing exits 2" 2 "$?"
t_eq "run --funclat: ... with one error line naming it" "1 1" \
	"$(wc -l <"$T_TMP/b.err") $(grep -c "^ksight: error: funclat: no function matches 'no_such_function' in " "$T_TMP/b.err")"
"$KSIGHT" run syscalls,funclat -d 0.1 >/dev/null 2>"$T_TMP/b.err"
t_eq "run: funclat without --funclat exits 2" 2 "$?"
t_eq "run: funclat without --funclat, one error line" 1 "$(wc -l <"$T_TMP/b.err")"

t_no_leaks "run: no BPF objects left" "$before"
exit $T_FAILED
