# Integration: `ksight serve --pin DIR`: kill -9 and restart adopt the pinned programs and saved counters (no decrease, no gap); unpin restores bpffs.
. tests/lib.sh
need_root serve_pin
for tool in curl bpftool jq; do
	if ! command -v $tool >/dev/null 2>&1; then
		t_skip serve_pin "no $tool"
		exit 0
	fi
done
cg2=$(awk '$3=="cgroup2" {print $2; exit}' /proc/mounts)
if [ -z "$cg2" ]; then
	t_skip serve_pin "no cgroup v2 mount"
	exit 0
fi
BPFFS=/sys/fs/bpf
D=$BPFFS/ksight-test-$$
N1=3000 N2=7000 N3=500
mounted_before=$(awk -v m=$BPFFS '$2 == m && $3 == "bpf" { print 1; exit }' /proc/mounts)
before=$T_TMP/orphans.before
t_orphans >"$before"
cg=$cg2/ksight-pin-$$
mkdir -p "$cg"
S_PID=
T_CLEANUP='kill -KILL $S_PID $W_PID 2>/dev/null; wait 2>/dev/null; "$KSIGHT" unpin "$D" >/dev/null 2>&1;
	"$KSIGHT" unpin "$D-all" >/dev/null 2>&1; rmdir "$cg" 2>/dev/null;
	[ -z "$mounted_before" ] && umount $BPFFS 2>/dev/null'

# bad input: one line, exit 2, nothing pinned
"$KSIGHT" serve --pin "$T_TMP/notbpf" --collectors syscalls -d 1 >/dev/null 2>"$T_TMP/bad.err"
t_eq "--pin on a non-bpf directory: exit 2, one line" "2 1" "$? $(wc -l <"$T_TMP/bad.err")"
"$KSIGHT" serve --pin "$D" --drop-caps --collectors syscalls -d 1 >/dev/null 2>"$T_TMP/bad.err"
t_eq "--pin with --drop-caps: exit 2, says why" "2 1" "$? $(grep -c 'cannot go together' "$T_TMP/bad.err")"
"$KSIGHT" unpin "$T_TMP" >/dev/null 2>&1
t_eq "unpin of a non-bpf directory: exit 2" 2 $?
t_eq "bad input left no pin directory" no "$([ -e "$D" ] && echo yes || echo no)"

# planted objects: serve --pin adopts and writes only what it pinned itself.  A foreign array of
# ks_state's very shape (and name), behind a symbolic link DIR/ks_state, then pinned as DIR/ks_state
# itself; a link for a collector's directory; DIR a link, DIR writable by others: each refused with
# one line and a non-zero exit, the foreign map unchanged, nothing added under DIR, nothing attached
F=$BPFFS/ksight-foreign-$$
T_CLEANUP="rm -rf '$F' '$F-d' '$D-link' 2>/dev/null; $T_CLEANUP"
# bpffs refuses dots in names; mounted as serve would (the cleanup unmounts it if it was not)
awk -v m=$BPFFS '$2 == m && $3 == "bpf" { f = 1 } END { exit !f }' /proc/mounts || mount -t bpf -o mode=0700 bpf $BPFFS
marker=$(python3 -c "print(' '.join(['0x41'] * 8 + ['0'] * 4088))")
plant_map() { # plant_map PATH: a ks_state look-alike, with 8 bytes of 'A' in element 0
	bpftool map create "$1" type array key 4 value 4096 entries 33 name ks_state &&
		bpftool map update pinned "$1" key 0 0 0 0 value $marker
}
# refused WHAT EXIT PATTERN [ARGS]: serve --pin "$D" ARGS exits EXIT with one line matching PATTERN
refused() {
	_what=$1 _exit=$2 _pat=$3
	shift 3
	"$KSIGHT" serve --pin "$D" --collectors syscalls -d 1 --listen 127.0.0.1:0 "$@" >/dev/null 2>"$T_TMP/pl.err"
	t_eq "$_what: exit $_exit, one line" "$_exit 1 1" "$? $(wc -l <"$T_TMP/pl.err") $(grep -c "$_pat" "$T_TMP/pl.err")"
}
mkdir -m 0700 "$D"
plant_map "$F"
want=$(bpftool -j map dump pinned "$F" | md5sum)
ln -s "$F" "$D/ks_state"
refused "a planted link DIR/ks_state to a foreign ks_state-shaped array" 1 "symbolic link"
t_eq "the foreign array behind the link is unchanged" "$want" "$(bpftool -j map dump pinned "$F" | md5sum)"
t_eq "nothing added under DIR" "ks_state" "$(ls -A "$D" | tr '\n' ' ' | sed 's/ $//')"
rm "$D/ks_state"
plant_map "$D/ks_state"
refused "a foreign ks_state-shaped array pinned as DIR/ks_state" 1 "not counters ksight saved"
t_eq "the foreign array is unchanged" "$want" "$(bpftool -j map dump pinned "$D/ks_state" | md5sum)"
t_eq "nothing added under DIR" "ks_state" "$(ls -A "$D" | tr '\n' ' ' | sed 's/ $//')"
rm "$D/ks_state"
mkdir -m 0700 "$F-d"
ln -s "$F-d" "$D/ks_syscalls"
refused "a planted link for a collector's pins, DIR/ks_syscalls" 1 "symbolic link"
t_eq "nothing added under DIR or behind the link" "ks_syscalls|" "$(ls -A "$D")|$(ls -A "$F-d")"
rm "$D/ks_syscalls"
ln -s "$D" "$D-link"
"$KSIGHT" serve --pin "$D-link" --collectors syscalls -d 1 >/dev/null 2>"$T_TMP/pl.err"
t_eq "--pin DIR a symbolic link: exit 2, one line" "2 1 1" \
	"$? $(wc -l <"$T_TMP/pl.err") $(grep -c 'symbolic link' "$T_TMP/pl.err")"
rm "$D-link"
chmod 0777 "$D"
refused "--pin DIR writable by others" 1 "writable by it alone"
t_eq "and DIR left empty" "" "$(ls -A "$D")"
# unpin removes only what ksight made: a planted link and another uid's look-alike pin stay, and DIR with them
ln -s "$F" "$D/ks_state"
# a look-alike pin of another uid (bpffs gives a pin its pinner's uid; root's chown makes one)
bpftool map create "$D/ks_syscalls" type array key 4 value 8 entries 1 name ks_x && chown nobody "$D/ks_syscalls"
"$KSIGHT" unpin "$D" 2>"$T_TMP/up.err"
t_eq "unpin of planted entries: exit 0, says what it left" "0 1" "$? $(grep -c 'did not make' "$T_TMP/up.err")"
t_eq "unpin of planted entries: the link and another uid's pin stay" "ks_state ks_syscalls" \
	"$(ls -A "$D" | sort | tr '\n' ' ' | sed 's/ $//')"
t_eq "the foreign array behind the link is unchanged" "$want" "$(bpftool -j map dump pinned "$F" | md5sum)"
rm -f "$D/ks_state" "$D/ks_syscalls"
rm -f "$F"
rmdir "$F-d" "$D"
t_no_leaks "planted objects: nothing left attached" "$before"

# start_serve ERRFILE [FAULT [ARGS]]: FAULT is a test-only KSIGHT_FAULT kill point (src/core/pin.h)
start_serve() {
	_e=$1 _f=${2:-}
	shift
	[ $# -gt 0 ] && shift
	t_serve_start "$_e" "$_f" "serve --pin starts" --pin "$D" --collectors syscalls,runqlat -c "$cg" "$@"
}
# getppid calls counted, from a text scrape
calls() {
	curl -s --max-time 5 "$URL?format=text" | sed -n 's/^ksight_syscalls_calls_total{syscall="getppid",nr="[0-9]*"} //p'
}
# the getppid latency histogram's count: every call has its latency once
hist_count() {
	curl -s --max-time 5 "$URL?format=text" | sed -n 's/^ksight_syscalls_latency_seconds_count{syscall="getppid",nr="[0-9]*"} //p'
}
# poll_calls N: waits (up to 20 s) until the count is N; prints the last one
poll_calls() {
	for _ in $(seq 1 80); do
		_c=$(calls)
		[ "$_c" = "$1" ] && break
		sleep 0.25
	done
	echo "$_c"
}
# the collectors' counter series (counters, histogram counts and sums) of a text scrape, "series value" per line
counters() {
	curl -s --max-time 5 "$URL?format=text" |
		grep -E '^ksight_((syscalls|runqlat)_[a-z_]*(_total|_count|_sum)|lost_events_total)(\{| )' | grep -v '_bucket{' | sort
}
# the workload: N getppid calls from inside the test's cgroup
work() {
	w_start -n "$1"
	echo "$W_PID" >"$cg/cgroup.procs"
	w_go
	W_PID=
}

start_serve "$T_TMP/s1.err"
if [ -z "$mounted_before" ]; then
	t_ok "bpffs was not mounted: serve mounted it and said so" grep -q "mounted a bpf filesystem at $BPFFS" "$T_TMP/s1.err"
fi
# bpffs apart from DIR, once mounted: what unpin must leave
find $BPFFS 2>/dev/null | grep -v "^$D" | sort >"$T_TMP/bpffs.before"
t_ok "serve --pin: collectors pinned" grep -q "serving syscalls (hook [a-z_]*), pinned" "$T_TMP/s1.err"
for o in ks_syscalls ks_runqlat; do
	t_eq "$o: maps, programs and links pinned under DIR" "yes yes yes" \
		"$(for k in map prog link; do ls "$D/$o" | grep -q "^${k}_" && printf 'yes ' || printf 'no '; done | sed 's/ $//')"
done
# a second serve on the same DIR would split the drains: refused while the first runs
"$KSIGHT" serve --pin "$D" --collectors syscalls,runqlat -c "$cg" --listen 127.0.0.1:0 -d 1 >/dev/null 2>"$T_TMP/busy.err"
t_eq "a second serve on the same DIR: exit 1, one line" "1 1" "$? $(wc -l <"$T_TMP/busy.err")"
work $N1
t_eq "first serve: exact getppid count" $N1 "$(poll_calls $N1)"
sleep 1.5 # a drain or two more of runqlat
counters >"$T_TMP/c1"

# kill -9: the pins keep the programs attached; the calls made while no serve runs are kept in the maps
kill -KILL "$S_PID"
wait "$S_PID" 2>/dev/null
S_PID=
t_ok "after kill -9: the links are still pinned" sh -c "ls '$D/ks_syscalls' | grep -q '^link_'"
work $N2
start_serve "$T_TMP/s2.err"
t_ok "the restart resumed the saved counters" grep -q "resumed the counters of 2 collectors" "$T_TMP/s2.err"
t_eq "restarted serve: calls before, and while no serve ran, all counted (no gap)" $((N1 + N2)) \
	"$(poll_calls $((N1 + N2)))"
counters >"$T_TMP/c2"
# every counter series of the first serve is there and not smaller
dec=$(join "$T_TMP/c1" "$T_TMP/c2" -a 1 -e MISSING -o 0,1.2,2.2 |
	awk '$3 == "MISSING" || $3 + 0 < $2 + 0 { print $1 " " $2 " -> " $3 }' | head -5)
t_eq "restarted serve: no counter decreased or vanished ($(wc -l <"$T_TMP/c1") series)" "" "$dec"
t_ok "restarted serve: counters were compared" test "$(wc -l <"$T_TMP/c1")" -gt 3

# a different filter cannot adopt programs loaded for another: exit 1 with one line, nothing changed
kill -TERM "$S_PID"
wait "$S_PID"
t_eq "SIGTERM under --pin: exit 0" 0 $?
S_PID=
"$KSIGHT" serve --pin "$D" --collectors syscalls,runqlat --listen 127.0.0.1:0 -d 2 >/dev/null 2>"$T_TMP/mis.err"
t_eq "other options than the pinned programs': exit 1, told to unpin" "1 1" \
	"$? $(grep -c "ksight unpin $D" "$T_TMP/mis.err")"
# SIGTERM left them attached: counted by the next serve
work $N3
start_serve "$T_TMP/s3.err"
t_eq "after SIGTERM and a restart: still exact" $((N1 + N2 + N3)) "$(poll_calls $((N1 + N2 + N3)))"

# A kill -9 inside a drain, at each step of read -> save -> empty (issue 14).
# KSIGHT_FAULT=POINT:2 kills serve at its second drain, 2 s after the first
# (at start-up): the calls made in between are in the half that drain reads.
# after-read: read, not saved: the restart must count them (before, lost);
# after-save and in-clear (syscalls emptied, its drain not yet counted as
# emptied; runqlat not emptied): saved, so the restart must empty that half
# without counting it again (before, counted twice).
total=$((N1 + N2 + N3))
NK=2000
for point in after-read after-save in-clear; do
	kill -TERM "$S_PID"
	wait "$S_PID"
	S_PID=
	start_serve "$T_TMP/k-$point.err" "$point:2" -i 2
	work $NK
	total=$((total + NK))
	wait "$S_PID"
	t_eq "$point: serve sent itself SIGKILL at the point (exit 137)" 137 $?
	S_PID=
	start_serve "$T_TMP/r-$point.err"
	want=2
	[ $point = after-read ] && want=0
	t_eq "$point: the restart emptied a saved half without counting it, in both collectors or none" $want \
		"$(grep -c 'was saved but not emptied: emptied it without counting it again' "$T_TMP/r-$point.err")"
	t_eq "$point: restarted serve: every call counted once" $total "$(poll_calls $total)"
	# a half counted twice would show at a later drain, once the programs have been back in it
	sleep 2.5
	t_eq "$point: restarted serve, two drains later: every call still counted once" $total "$(calls)"
	t_eq "$point: restarted serve: the latency histogram counts every call once" $total "$(hist_count)"
done
kill -TERM "$S_PID"
wait "$S_PID"
S_PID=

"$KSIGHT" unpin "$D" 2>"$T_TMP/unpin.err"
t_eq "unpin: exit 0" "0 " "$? $(cat "$T_TMP/unpin.err")"
find $BPFFS 2>/dev/null | sort >"$T_TMP/bpffs.after"
t_eq "unpin: bpffs as before" "" "$(diff "$T_TMP/bpffs.before" "$T_TMP/bpffs.after")"
t_no_leaks "unpin: nothing left attached" "$before"
# every collector adopts: all six pinned, killed inside a drain (after its save, before the maps are
# emptied: its sixth, 5 s in), restarted; each empties that half without counting it, and no
# counter series decreased or vanished
D2=$D-all
KSIGHT_FAULT=after-save:6 "$KSIGHT" serve --pin "$D2" --listen 127.0.0.1:0 >/dev/null 2>"$T_TMP/a1.err" &
S_PID=$!
if t_wait_for "$T_TMP/a1.err" "listening on"; then
	URL=$(sed -n 's|.*listening on \(http://[^ ]*\)|\1|p' "$T_TMP/a1.err")
	dd if=/dev/zero of="$(pwd)/build/ksight-pin-io.$$" bs=64k count=16 oflag=direct 2>/dev/null
	rm -f "$(pwd)/build/ksight-pin-io.$$"
	# TCP of its own for tcp's rows (a scrape's connection is counted only at the next drain)
	curl -s --max-time 5 "$URL/healthz" >/dev/null
	sleep 2
	curl -s --max-time 5 "$URL?format=text" | grep -E '^ksight_[a-z]+_[a-z_]*(_total|_count|_sum)(\{| )' |
		grep -vE '_bucket\{|^ksight_(scrapes|http_|drain_errors|pin_save_errors|bpf_prog)' | sort >"$T_TMP/a1"
	wait "$S_PID" 2>/dev/null
	t_eq "all six: serve sent itself SIGKILL after a save (exit 137)" 137 $?
	"$KSIGHT" serve --pin "$D2" --listen 127.0.0.1:0 >/dev/null 2>"$T_TMP/a2.err" &
	S_PID=$!
	t_wait_for "$T_TMP/a2.err" "listening on"
	URL=$(sed -n 's|.*listening on \(http://[^ ]*\)|\1|p' "$T_TMP/a2.err")
	sleep 1.5
	curl -s --max-time 5 "$URL?format=text" | grep -E '^ksight_[a-z]+_[a-z_]*(_total|_count|_sum)(\{| )' | sort >"$T_TMP/a2"
	t_eq "all six collectors adopted after kill -9" 6 "$(grep -c 'serving [a-z]* (hook [a-z_]*), pinned' "$T_TMP/a2.err")"
	t_eq "all six: each emptied the saved half without counting it" 6 \
		"$(grep -c 'was saved but not emptied: emptied it without counting it again' "$T_TMP/a2.err")"
	dec=$(join "$T_TMP/a1" "$T_TMP/a2" -a 1 -e MISSING -o 0,1.2,2.2 |
		awk '$3 == "MISSING" || $3 + 0 < $2 + 0 { print $1 " " $2 " -> " $3 }' | head -5)
	t_eq "all six collectors: no counter decreased or vanished ($(wc -l <"$T_TMP/a1") series)" "" "$dec"
	for col in syscalls runqlat offcpu biolat tcp mem; do
		t_ok "$col: series compared" grep -q "^ksight_${col}_" "$T_TMP/a1"
	done
	kill -TERM "$S_PID"
	wait "$S_PID"
	S_PID=
	"$KSIGHT" unpin "$D2"
	t_eq "unpin of the six: exit 0" 0 $?
else
	t_fail "serve --pin with every collector starts" "$(cat "$T_TMP/a1.err")"
	kill -KILL "$S_PID" 2>/dev/null
	S_PID=
fi
find $BPFFS 2>/dev/null | sort >"$T_TMP/bpffs.after2"
t_eq "unpin of the six: bpffs as before" "" "$(diff "$T_TMP/bpffs.before" "$T_TMP/bpffs.after2")"

# without --pin nothing outlives the process
"$KSIGHT" serve --collectors syscalls --listen 127.0.0.1:0 -d 1 >/dev/null 2>&1
find $BPFFS 2>/dev/null | sort >"$T_TMP/bpffs.nopin"
t_eq "without --pin: nothing pinned" "" "$(diff "$T_TMP/bpffs.before" "$T_TMP/bpffs.nopin")"
t_no_leaks "without --pin: nothing left attached" "$before"
exit $T_FAILED
