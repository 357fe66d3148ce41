# Integration: `ksight serve --pin DIR --funclat TARGET`: funclat's own probes are pinned and adopted like every collector's: kill -9 (also inside a drain) and restart continue the counts exactly; other targets and USDT refused; unpin leaves nothing.
. tests/lib.sh
need_root serve_pin_funclat
for tool in bpftool "curl busybox"; do
	# t_get takes curl or busybox's wget
	if ! for t in $tool; do command -v $t; done | grep -q .; then
		t_skip serve_pin_funclat "no $(echo $tool | sed 's/ / or /')"
		exit 0
	fi
done
BPFFS=/sys/fs/bpf
D=$BPFFS/ksight-fltest-$$
W=$WORKLOADS/fl_calls
[ -x "$W" ] || { t_fail "workload" "no $W (make all)"; exit 1; }
N1=300 N2=500 N3=200 NK=400 US=100
mounted_before=$(awk -v m=$BPFFS '$2 == m && $3 == "bpf" { print 1; exit }' /proc/mounts)
before=$T_TMP/orphans.before
t_orphans >"$before"
S_PID=
T_CLEANUP='kill -KILL $S_PID 2>/dev/null; wait 2>/dev/null; "$KSIGHT" unpin "$D" >/dev/null 2>&1;
	"$KSIGHT" unpin "$D-up" >/dev/null 2>&1; [ -z "$mounted_before" ] && umount $BPFFS 2>/dev/null'
SEL='function="fl_sleep",module="fl_calls"'

# start_serve DIR ERRFILE [FAULT [ARGS]]: FAULT is a test-only KSIGHT_FAULT kill point (src/core/pin.h)
start_serve() {
	_d=$1 _e=$2 _f=${3:-}
	shift 2
	[ $# -gt 0 ] && shift
	t_serve_start "$_e" "$_f" "serve --pin --funclat starts" --pin "$_d" --collectors funclat --funclat "$W:fl_sleep" \
		--no-pprof -i 0.2 "$@"
}
stop_serve() {
	kill -TERM "$S_PID"
	wait "$S_PID"
	S_PID=
}
# fl_sleep's calls and its timed calls (the latency histogram's count), from a text scrape
counts() {
	t_get "$URL?format=text" >"$T_TMP/scrape"
	echo "$(sed -n "s/^ksight_funclat_calls_total{$SEL} //p" "$T_TMP/scrape") $(sed -n "s/^ksight_funclat_latency_seconds_count{$SEL} //p" "$T_TMP/scrape")"
}
# poll N: waits (up to 20 s) until N calls, each timed, are counted; prints the last counts
poll() {
	for _ in $(seq 1 80); do
		_c=$(counts)
		[ "$_c" = "$1 $1" ] && break
		sleep 0.25
	done
	echo "$_c"
}
# funclat's counter series (counters, histogram counts and sums), "series value" per line
series() {
	t_get "$URL?format=text" | grep -E '^ksight_funclat_[a-z_]*(_total|_count|_sum)(\{| )' | sort
}
# calls N: a fresh fl_calls process makes N calls of fl_sleep (the probes are on the file: every process's)
calls() {
	g_start "$T_TMP/g" "$W" "$1" $US || { t_fail "workload" "did not start"; return 1; }
	kill -USR1 "$G_PID"
	t_wait_for "$G_FILE" "^done" || t_fail "workload" "did not make its $1 calls"
	kill -USR1 "$G_PID"
	wait "$G_PID"
}

start_serve "$D" "$T_TMP/s1.err"
t_ok "serve --pin --funclat: funclat served, pinned" grep -q "serving funclat (hook uprobe), pinned" "$T_TMP/s1.err"
t_eq "funclat's maps, programs and own links pinned under DIR" "yes yes yes" \
	"$(for k in map prog link; do ls "$D/ks_funclat" | grep -q "^${k}_" && printf 'yes ' || printf 'no '; done | sed 's/ $//')"
calls $N1
t_eq "first serve: exact fl_sleep calls, each timed" "$N1 $N1" "$(poll $N1)"
series >"$T_TMP/c1"

# kill -9: the pinned links keep the probes attached; the calls made while no serve runs stay in the maps
kill -KILL "$S_PID"
wait "$S_PID" 2>/dev/null
S_PID=
calls $N2
start_serve "$D" "$T_TMP/s2.err"
t_ok "the restart resumed funclat's saved counters" grep -q "resumed the counters of 1 collectors" "$T_TMP/s2.err"
t_ok "the restart adopted funclat's pins" grep -q "serving funclat (hook uprobe), pinned" "$T_TMP/s2.err"
total=$((N1 + N2))
t_eq "restarted serve: calls before, and while no serve ran, all counted once (no gap)" "$total $total" "$(poll $total)"
series >"$T_TMP/c2"
dec=$(join "$T_TMP/c1" "$T_TMP/c2" -a 1 -e MISSING -o 0,1.2,2.2 |
	awk '$3 == "MISSING" || $3 + 0 < $2 + 0 { print $1 " " $2 " -> " $3 }' | head -5)
t_eq "restarted serve: no funclat series decreased or vanished ($(wc -l <"$T_TMP/c1") series)" "" "$dec"

# a kill -9 inside a drain: its second (1 s after the first, at start-up) reads the calls made in
# between; after-read: not saved, the restart counts them; after-save: saved, the restart empties
# that half without counting it again
for point in after-read after-save; do
	stop_serve
	start_serve "$D" "$T_TMP/k-$point.err" "$point:2" -i 1
	calls $NK
	total=$((total + NK))
	wait "$S_PID"
	t_eq "$point: serve sent itself SIGKILL at the point (exit 137)" 137 $?
	S_PID=
	start_serve "$D" "$T_TMP/r-$point.err"
	want=1
	[ $point = after-read ] && want=0
	t_eq "$point: the restart emptied a saved half without counting it, or had none" $want \
		"$(grep -c 'was saved but not emptied: emptied it without counting it again' "$T_TMP/r-$point.err")"
	t_eq "$point: restarted serve: every call counted once" "$total $total" "$(poll $total)"
	# a half counted twice would show once the programs have been back in it: a few drains later
	sleep 1
	t_eq "$point: restarted serve, drains later: every call still counted once" "$total $total" "$(counts)"
done
stop_serve

# the programs pinned for fl_sleep are not another target's: refused, told to unpin, nothing changed
ls -R "$D" >"$T_TMP/ls.before"
"$KSIGHT" serve --pin "$D" --collectors funclat --funclat "$W:fl_tiny_a" --no-pprof --listen 127.0.0.1:0 -d 1 \
	>/dev/null 2>"$T_TMP/mis.err"
# (one error line; the other says the saved counters were read)
t_eq "other targets than the pinned programs': exit 1, one error, told to unpin" "1 1 1" \
	"$? $(grep -c 'error:' "$T_TMP/mis.err") $(grep -c "ksight unpin $D" "$T_TMP/mis.err")"
# USDT probes are libbpf's links per probe site, which cannot be pinned: refused before anything loads
"$KSIGHT" serve --pin "$D" --collectors funclat --funclat "$W:ksight_test:tick" --no-pprof --listen 127.0.0.1:0 -d 1 \
	>/dev/null 2>"$T_TMP/usdt.err"
t_eq "a USDT target under --pin: exit 1, one error naming USDT" "1 1 1" \
	"$? $(grep -c 'error:' "$T_TMP/usdt.err") $(grep -c "error: .*USDT" "$T_TMP/usdt.err")"
ls -R "$D" >"$T_TMP/ls.after"
t_eq "refused starts changed nothing under DIR" "" "$(diff "$T_TMP/ls.before" "$T_TMP/ls.after")"
# SIGTERM left the probes attached: the calls made since are counted by the next serve
calls $N3
total=$((total + N3))
start_serve "$D" "$T_TMP/s3.err"
t_eq "after SIGTERM and a restart: still exact" "$total $total" "$(poll $total)"
stop_serve
"$KSIGHT" unpin "$D" 2>"$T_TMP/unpin.err"
t_eq "unpin: exit 0, DIR gone" "0  no" "$? $(cat "$T_TMP/unpin.err") $([ -e "$D" ] && echo yes || echo no)"
t_no_leaks "unpin: funclat's probes and maps gone" "$before"

# a uprobe per function (where the kernel has no uprobe_multi): its two links pinned and adopted the same way
export KSIGHT_FEATURES_OFF=uprobe_multi
start_serve "$D-up" "$T_TMP/u1.err"
t_eq "uprobe per function: both links pinned" "link_x0 link_x1" \
	"$(ls "$D-up/ks_funclat" | grep '^link_' | sort | tr '\n' ' ' | sed 's/ $//')"
calls $N1
t_eq "uprobe per function: exact calls" "$N1 $N1" "$(poll $N1)"
kill -KILL "$S_PID"
wait "$S_PID" 2>/dev/null
S_PID=
calls $N2
start_serve "$D-up" "$T_TMP/u2.err"
t_eq "uprobe per function: after kill -9 and a restart, every call counted once" "$((N1 + N2)) $((N1 + N2))" \
	"$(poll $((N1 + N2)))"
stop_serve
# SIGTERM closes the links' fds (and their perf events'): the pinned links keep the uprobes
calls $N3
start_serve "$D-up" "$T_TMP/u3.err"
t_eq "uprobe per function: after SIGTERM and a restart, still exact" "$((N1 + N2 + N3)) $((N1 + N2 + N3))" \
	"$(poll $((N1 + N2 + N3)))"
stop_serve
unset KSIGHT_FEATURES_OFF
"$KSIGHT" unpin "$D-up"
t_eq "uprobe per function: unpin exit 0" 0 $?
t_no_leaks "uprobe per function: nothing left attached" "$before"
exit $T_FAILED
