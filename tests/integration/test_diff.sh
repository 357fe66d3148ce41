# Integration: `ksight diff A B`: a recording against itself shows no change; 1 ms against 2 ms sleeps is flagged, p50 about doubled.
. tests/lib.sh
need_root diff

PAIR="--pair raw_syscalls:sys_enter/raw_syscalls:sys_exit --key common_pid"
K=300

# rec_sleeps MS FILE: records the syscalls of a sleeper doing K sleeps of MS ms
rec_sleeps() {
	g_start "$T_TMP/sl.$1" "$WORKLOADS/sleeper" -k $K -m "$1" || return 1
	k_start record -e raw_syscalls:sys_enter -e raw_syscalls:sys_exit -p "$G_PID" -o "$2"
	kill -USR1 "$G_PID"
	t_wait_for "$G_FILE" "^done" || echo "sleeper did not finish" >&2
	kill -USR1 "$G_PID"
	wait "$K_PID"
	wait "$G_PID"
}

rec_sleeps 1 "$T_TMP/a.ksr"
rec_sleeps 2 "$T_TMP/b.ksr"

# 1. a file against itself: nothing changed
"$KSIGHT" diff -j "$T_TMP/a.ksr" "$T_TMP/a.ksr" $PAIR >"$T_TMP/self.json"
t_eq "diff self: exit 0" "0" "$?"
t_eq "diff self: the pair's sleeps are all there" "true" "$(jq ".pairs[0].a.count >= $K" "$T_TMP/self.json")"
t_eq "diff self: not significant, p = 1, P(B > A) = 0.5" "false 1 0.5" \
	"$(jq -r '.pairs[0].test | "\(.significant) \(.p_value) \(.prob_b_greater)"' "$T_TMP/self.json")"
t_eq "diff self: no quantile moved" "0 0 0" "$(jq -r '.pairs[0].delta | "\(.p50_ns) \(.p90_ns) \(.p99_ns)"' "$T_TMP/self.json")"
t_eq "diff self: every event count the same, rate change 0" "true" \
	"$(jq '.events | length > 0 and all(.count_delta == 0 and .per_s_change_pct == 0)' "$T_TMP/self.json")"

# 2. 1 ms against 2 ms: significant, B slower, p50 about doubled
"$KSIGHT" diff -j "$T_TMP/a.ksr" "$T_TMP/b.ksr" $PAIR >"$T_TMP/d.json"
t_eq "diff 1ms/2ms: exit 0" "0" "$?"
t_eq "diff 1ms/2ms: Mann-Whitney flags it, B slower" "true significant: B is slower" \
	"$(jq -r '.pairs[0].test | "\(.significant) \(.verdict)"' "$T_TMP/d.json")"
t_eq "diff 1ms/2ms: p-value tiny, B above A most of the time" "true" \
	"$(jq '.pairs[0].test | .p_value < 1e-10 and .prob_b_greater > 0.8' "$T_TMP/d.json")"
r=$(jq '.pairs[0].delta.p50_ratio' "$T_TMP/d.json")
t_ok "diff 1ms/2ms: p50 about doubled (ratio $r; a loaded host stretches both sleeps alike)" jq -e "$r > 1.5 and $r < 2.5" -n
t_eq "diff 1ms/2ms: both sides hold the K sleeps" "true" \
	"$(jq ".pairs[0].a.count >= $K and .pairs[0].b.count >= $K" "$T_TMP/d.json")"
t_eq "diff 1ms/2ms: the same syscall counts on both sides" "true" \
	"$(jq '.events | all(.count_a > 0 and .count_b > 0)' "$T_TMP/d.json")"

# the text form says the same
"$KSIGHT" diff "$T_TMP/a.ksr" "$T_TMP/b.ksr" $PAIR >"$T_TMP/d.txt"
t_eq "diff text: the verdict line" "1" "$(grep -c '^Mann-Whitney U: p = .*significant: B is slower (at p < 0.01)$' "$T_TMP/d.txt")"
t_eq "diff text: p50 row with its ratio" "1" "$(grep -cE '^p50 +[0-9.]+ms +[0-9.]+ms +[0-9.]+x$' "$T_TMP/d.txt")"
"$KSIGHT" diff "$T_TMP/a.ksr" "$T_TMP/a.ksr" $PAIR >"$T_TMP/s.txt"
t_eq "diff text self: no significant change" "1" "$(grep -c 'no significant change' "$T_TMP/s.txt")"

# bad input: exit 2
"$KSIGHT" diff "$T_TMP/a.ksr" 2>"$T_TMP/e"
t_eq "diff with one file: exit 2" "2" "$?"
"$KSIGHT" diff "$T_TMP/a.ksr" /etc/hostname 2>"$T_TMP/e"
t_eq "diff with a non-recording: exit 2, names it" "2 1" "$? $(grep -c "'/etc/hostname' is not a ksight recording" "$T_TMP/e")"
"$KSIGHT" diff "$T_TMP/a.ksr" "$T_TMP/b.ksr" --pair sched:sched_wakeup/sched:sched_switch --key pid 2>"$T_TMP/e"
t_eq "diff with a pair not recorded: exit 2" "2 1" "$? $(grep -c 'not in this recording' "$T_TMP/e")"
"$KSIGHT" diff "$T_TMP/a.ksr" "$T_TMP/b.ksr" "$T_TMP/b.ksr" 2>"$T_TMP/e"
t_eq "diff with three files: exit 2" "2" "$?"
