# Integration: `ksight top` in an 80x24 tmux pane: a workload's exact syscall count in its window, sort keys, the name filter, view switch, a hostile name shown escaped, wall's per-thread state shares, q and Ctrl-C leave nothing attached, no TTY: a hint and exit 2.
. tests/lib.sh
need_root top
if ! command -v tmux >/dev/null 2>&1; then
	t_skip "top" "no tmux (scripts/setup.sh installs it)"
	exit 0
fi

TC=$WORKLOADS/top_calls
S=ksight-top-$$
# a server of its own: other tmux users on the machine are not touched
tm() { tmux -L "$S" "$@"; }
T_CLEANUP='tm kill-server 2>/dev/null; kill $PA $PB $PC $WP 2>/dev/null'
# top in the pane with ARGS; its status goes to top.rc.  SIGINT is ignored by the shell only
# (top installs its own handler), so Ctrl-C ends top and the shell still writes the status.
cat >"$T_TMP/run.sh" <<EOF
trap '' INT
"$KSIGHT" top "\$@" 2>>"$T_TMP/top.err"
echo \$? >"$T_TMP/top.rc"
EOF

# 1. no terminal: one line, exit 2, nothing loaded
"$KSIGHT" top </dev/null >"$T_TMP/notty.out" 2>"$T_TMP/notty.err"
t_eq "top without a terminal exits 2" "2" "$?"
t_eq "top without a terminal says so in one line" "1" "$(grep -c "top needs a terminal" "$T_TMP/notty.err")"

t_orphans >"$T_TMP/orphans.before"
# three named workloads; each SIGUSR1 makes N getppid after one rt_sigtimedwait return: N + 1 calls
"$TC" topwl_a 300 >"$T_TMP/a" &
PA=$!
"$TC" topwl_b 2000 >"$T_TMP/b" &
PB=$!
# ESC [ 2 J in its name: on a terminal that bytes would clear the screen
"$TC" "$(printf 'topwl\033[2J')" 10 >"$T_TMP/c" &
PC=$!
for f in a b c; do t_wait_for "$T_TMP/$f" ready || t_fail "top workload" "$f did not start"; done

# -i 3: a window is long enough for every key below to be answered within it
tm new-session -d -s "$S" -c "$PWD" -x 80 -y 24 sh "$T_TMP/run.sh" -i 3
screen() { tm capture-pane -p -t "$S" 2>/dev/null; }
# waits up to T_WAIT s until the screen matches the ERE $1; 1 on timeout
see() {
	_i=0
	until screen | grep -qE "$1"; do
		_i=$((_i + 1))
		[ $_i -gt $((T_WAIT * 20)) ] && return 1
		sleep 0.05
	done
}
tick() { screen | sed -n '2s/^#\([0-9]*\) .*/\1/p'; }
# burst PID...: signals the workloads right after a redraw, so that their calls all fall in the
# next window (microseconds of a window of seconds), and waits for that window's frame (sets T1)
burst() {
	T0=$(tick)
	see "^#$((T0 + 1)) "
	kill -USR1 "$@"
	T1=$((T0 + 2))
	see "^#$T1 " || t_fail "top ticks" "no frame #$T1"
}
# ends top with the keys $1 and waits for its status
quit() {
	tm send-keys -t "$S" "$1"
	_i=0
	while [ ! -s "$T_TMP/top.rc" ] && [ $_i -lt $((T_WAIT * 20)) ]; do _i=$((_i + 1)); sleep 0.05; done
}

if ! see '^#1 '; then
	t_fail "top draws" "no first frame: $(cat "$T_TMP/top.err")"
	exit 1
fi
KPID=$(pgrep -P "$(tm list-panes -t "$S" -F '#{pane_pid}')")
PROGS=$(grep -h '^prog_id:' /proc/"$KPID"/fdinfo/* 2>/dev/null | awk '{print $2}' | sort -u | tr '\n' ' ')
LINKS=$(grep -h '^link_id:' /proc/"$KPID"/fdinfo/* 2>/dev/null | awk '{print $2}' | sort -u | tr '\n' ' ')
t_ok "top holds BPF programs while it runs" test -n "$PROGS"

tm send-keys -t "$S" / topwl Enter
see '^filter: topwl( |$)' || t_fail "top filter" "no filter line"
burst $PA $PB $PC
screen >"$T_TMP/s1"
# PID COMM CPU% RUNQ SYSCALLS ...: the 5th column
t_eq "topwl_a's syscalls in its window: 300 getppid + 1 sigwait" "301" \
	"$(awk '$2 == "topwl_a" {print $5}' "$T_TMP/s1")"
t_eq "topwl_b's syscalls in its window" "2001" "$(awk '$2 == "topwl_b" {print $5}' "$T_TMP/s1")"
t_eq "a hostile name is shown escaped, its count with it" "11" \
	"$(awk '$2 == "topwl\\x1b[2J" {print $5}' "$T_TMP/s1")"
t_eq "the filter leaves only the workloads" "3" "$(grep -cE "^ *[0-9]+ topwl" "$T_TMP/s1")"
t_eq "no raw ESC reaches the pane" "0" "$(tm capture-pane -p -e -t "$S" | grep -c "$(printf '\033')\[2J")"

tm send-keys -t "$S" s
see '\*SYSCALLS' && screen >"$T_TMP/s2"
t_eq "s sorts by syscalls, most first" "topwl_b topwl_a topwl\\x1b[2J" \
	"$(awk '$1 ~ /^[0-9]+$/ && $2 ~ /^topwl/ {printf "%s%s", n++ ? " " : "", $2}' "$T_TMP/s2")"
tm send-keys -t "$S" n
see '\*COMM' && screen >"$T_TMP/s3"
t_eq "n sorts by name" "topwl\\x1b[2J topwl_a topwl_b" \
	"$(awk '$1 ~ /^[0-9]+$/ && $2 ~ /^topwl/ {printf "%s%s", n++ ? " " : "", $2}' "$T_TMP/s3")"
tm send-keys -t "$S" 1
see '\[1:syscalls\]' && screen >"$T_TMP/s4"
# pid comm count p50 p99
t_eq "view 1 is syscalls by pid with the same count" "$PB topwl_b 2001" \
	"$(awk '$2 == "topwl_b" {print $1, $2, $3}' "$T_TMP/s4")"
t_eq "every frame above was the burst's window" "$T1" "$(tick)"

quit q
t_eq "q ends top with status 0" "0" "$(cat "$T_TMP/top.rc" 2>/dev/null)"
# what it held is gone: programs and links by id (3 s for the kernel to free them)
left() {
	for id in $PROGS; do bpftool prog show id "$id" >/dev/null 2>&1 && echo "prog $id"; done
	for id in $LINKS; do bpftool link show id "$id" >/dev/null 2>&1 && echo "link $id"; done
}
_i=0
while [ -n "$(left)" ] && [ $_i -lt 30 ]; do _i=$((_i + 1)); sleep 0.1; done
t_eq "after q no program or link of top's remains" "" "$(left | tr '\n' ' ')"

# 2. -c CGROUP: only topwl_a, moved into a cgroup of its own; then Ctrl-C ends it as q does
cg2=$(awk '$3=="cgroup2" {print $2; exit}' /proc/mounts)
if [ -n "$cg2" ] && mkdir "$cg2/ksight-top-$$" 2>/dev/null; then
	CG=$cg2/ksight-top-$$
	T_CLEANUP="$T_CLEANUP; echo $PA >$cg2/cgroup.procs 2>/dev/null; rmdir $CG 2>/dev/null"
	echo $PA >"$CG/cgroup.procs"
	rm -f "$T_TMP/top.rc"
	tm new-session -d -s "$S" -c "$PWD" -x 80 -y 24 sh "$T_TMP/run.sh" -i 2 -c "$CG"
	see '^#1 ' || t_fail "top -c draws" "$(cat "$T_TMP/top.err")"
	burst $PA $PB
	screen >"$T_TMP/s5"
	t_eq "-c: the cgroup's process with its count" "301" "$(awk '$2 == "topwl_a" {print $5}' "$T_TMP/s5")"
	t_eq "-c: no process from outside it" "" "$(awk '$1 ~ /^[0-9]+$/ && $2 != "topwl_a" {print $2}' "$T_TMP/s5" | tr '\n' ' ')"
	quit C-c
	t_eq "Ctrl-C ends top with status 0" "0" "$(cat "$T_TMP/top.rc" 2>/dev/null)"
	echo $PA >"$cg2/cgroup.procs"
	rmdir "$CG"
else
	t_skip "top -c" "cannot make a cgroup v2 directory"
fi

# 3. the wall view (4): per thread each state's share of the window in %, adding up to 100, for
# tests/workloads/walllock.c, whose threads sleep on locks or in nanosleep by construction.
# 6 threads: main in pthread_join, 3 waiters that sleep on a mutex or a barrier all the time
# but for microseconds, 2 holders that poll /proc and sleep; for minutes (killed at the end)
"$WORKLOADS/walllock" 2 1 100000 5 >/dev/null &
WP=$!
rm -f "$T_TMP/top.rc"
tm new-session -d -s "$S" -c "$PWD" -x 80 -y 24 sh "$T_TMP/run.sh" -i 1
see '^#1 ' || t_fail "top wall draws" "no first frame: $(cat "$T_TMP/top.err")"
tm send-keys -t "$S" 4
see '\[4:wall\]' || t_fail "top wall view" "no view 4:wall: $(screen | head -1)"
tm send-keys -t "$S" / walllock Enter
see '^filter: walllock( |$)' || t_fail "top wall filter" "no filter line"
# a whole window after the workload started and the filter was set
T0=$(tick)
see "^#$((T0 + 2)) " || t_fail "top ticks" "no frame #$((T0 + 2))"
screen >"$T_TMP/sw"
t_eq "the wall view's header: tid, comm and the ten states" "1" \
	"$(grep -cE '^ +TID COMM +cpu% runq  thr   io    D lock  net  slp idle  oth$' "$T_TMP/sw")"
# TID COMM then ten whole percents: tid, their sum, lock, sleep
awk '$1 ~ /^[0-9]+$/ && $2 == "walllock" { s = 0; for (i = 3; i <= 12; i++) s += $i; print $1, s, $8, $10 }' \
	"$T_TMP/sw" >"$T_TMP/rows"
# main, asleep in pthread_join since before top attached, has no scheduler event to be seen by
# (docs/wall.md) unless top came up while it still made threads
t_in "a row per thread of walllock (5 or 6 threads)" 5 6 "$(wc -l <"$T_TMP/rows")"
t_eq "each thread's shares add up to 100 (whole percents: 95..105)" "" \
	"$(awk '$2 < 95 || $2 > 105 { print $1 ":" $2 }' "$T_TMP/rows" | tr '\n' ' ')"
t_in "the 3 waiters (and main if seen) sleep on locks >= 80% of the window" 3 4 \
	"$(awk '$3 >= 80' "$T_TMP/rows" | wc -l)"
t_eq "the 2 holders sleep (nanosleep, usleep) >= 50% of it" "2" "$(awk '$4 >= 50' "$T_TMP/rows" | wc -l)"
quit q
t_eq "wall view: q ends top with status 0" "0" "$(cat "$T_TMP/top.rc" 2>/dev/null)"
kill $WP 2>/dev/null
wait $WP 2>/dev/null
t_no_leaks "nothing left attached after top" "$T_TMP/orphans.before"
exit $T_FAILED
