# Integration: many probes attach and detach in bounded time, nothing lost around it: record -e 'syscalls:*' (system calls through the raw sys_enter/sys_exit, -d counted from the end of attach) and funclat on 600 functions (one uprobe_multi link, and the uprobe-per-function fallback); every probe gone at exit.
. tests/lib.sh
need_root attach
START_ID=$(t_prog_max_id)
REC=$T_TMP/sys.ksr
N=3000
M=200
now_ms() { echo $(($(date +%s%N) / 1000000)); }
tr_val() { "$KSIGHT" info -j "$1" | jq -r ".trailer[\"$2\"]"; }
# ev_count FILE EVENT [JQ-CONDITION]: events of that name (and condition) in the recording
ev_count() { "$KSIGHT" report -j "$1" | jq -s "map(select(.event == \"$2\" and (${3:-true}))) | length"; }

# 1. record -e 'syscalls:*' on a workload started (and waiting) before the attach: exactly its
# N getppid and M close(-1), entry and exit, nothing lost; the whole run in bounded time (a
# classic tracepoint per event took ~60 s here, nearly all of it detaching: a grace period each)
w_start -n $N -e $M
t0=$(now_ms)
k_start record -e 'syscalls:*' -p "$W_PID" -o "$REC"
w_go
wait "$K_PID"
rc=$?
took=$(($(now_ms) - t0))
t_eq "syscalls:*: exits by itself when -p's process ends" "0" "$rc"
line=$(grep '^ksight: tracing' "$K_ERR")
t_ok "syscalls:*: says what it attached, in how long, and that it records from then ($line)" \
	sh -c "echo '$line' | grep -Eq 'attached [0-9]+ probes? in [0-9]+ ms .*; recording until Ctrl-C$'"
raw=$(echo "$line" | sed -nE 's/.*\(([0-9]+) system-call events? through the raw.*/\1/p')
t_ok "syscalls:*: most events through the two raw tracepoints (${raw:-none})" test "${raw:-0}" -ge 600
t_ok "syscalls:*: attach, recording and detach in under 20 s (took ${took} ms)" test "$took" -lt 20000
t_eq "syscalls:*: exactly N getppid entries and exits" "$N $N" \
	"$(ev_count "$REC" syscalls:sys_enter_getppid) $(ev_count "$REC" syscalls:sys_exit_getppid)"
t_eq "syscalls:*: exactly M close(-1) entries, M exits with EBADF" "$M $M" \
	"$(ev_count "$REC" syscalls:sys_enter_close '.fields.fd % 4294967296 == 4294967295') $(ev_count "$REC" syscalls:sys_exit_close '.fields.ret == -9')"
t_eq "syscalls:*: the raw path's records read as the kernel's (nr 110 for getppid)" "110" \
	"$("$KSIGHT" report -j "$REC" | jq -s 'map(select(.event == "syscalls:sys_enter_getppid")) | .[0].fields.__syscall_nr')"
t_eq "syscalls:*: nothing lost, counts add up" "0 yes" "$(tr_val "$REC" lost) $(tr_val "$REC" exact)"

# a --filter reads the built records as the kernel's: __syscall_nr at 8
w_start -n $N -e $M
k_start record -e 'syscalls:sys_e*_close' -e syscalls:sys_enter_getppid --filter '__syscall_nr == 3' -p "$W_PID" -o "$REC"
w_go
wait "$K_PID"
t_eq "--filter on the raw path: M close entries and exits, no getppid, N filtered out" "$M $M 0 $N" \
	"$(ev_count "$REC" syscalls:sys_enter_close) $(ev_count "$REC" syscalls:sys_exit_close) $(ev_count "$REC" syscalls:sys_enter_getppid) $(tr_val "$REC" filtered)"

# 2. -d counts from the end of attach: the window in the trailer is -d long, and a workload that
# waited for the attached line has all its calls in it (the get* calls: a smaller file to read)
w_start -n $N -e 0
k_start record -e 'syscalls:sys_e*_get*' -d 1.5 -o "$REC"
w_go
wait "$K_PID"
ws=$(tr_val "$REC" window.start_ns | sed "s/^null$/0/")
we=$(tr_val "$REC" window.end_ns | sed "s/^null$/0/")
t_ok "-d 1.5: the window is 1.5 s, from the attach (took $(((we - ws) / 1000000)) ms)" \
	test "$((we - ws))" -ge 1500000000 -a "$((we - ws))" -lt 2500000000
t_eq "-d 1.5: the workload's N getppid all recorded, within the window" "$N $N" \
	"$(ev_count "$REC" syscalls:sys_enter_getppid ".pid == $W_PID") $(ev_count "$REC" syscalls:sys_enter_getppid ".pid == $W_PID and .ts_ns >= $ws and .ts_ns <= $we")"
t_eq "-d 1.5: grep 'recording for 1.5 s'" "1" "$(grep -c '; recording for 1.5 s$' "$K_ERR")"

# 3. the fallback (KSIGHT_FEATURES_OFF=raw_tp: a classic tracepoint per event), the same records
w_start -n $N -e $M
KSIGHT_FEATURES_OFF=raw_tp k_start record -e syscalls:sys_enter_getppid -e syscalls:sys_exit_close -p "$W_PID" -o "$REC"
w_go
wait "$K_PID"
t_eq "fallback: a classic tracepoint each" "1" "$(grep -c 'attached 2 probes in [0-9]* ms; recording' "$K_ERR")"
t_eq "fallback: exactly N getppid, M close exits with EBADF, nothing lost" "$N $M 0" \
	"$(ev_count "$REC" syscalls:sys_enter_getppid) $(ev_count "$REC" syscalls:sys_exit_close '.fields.ret == -9') $(tr_val "$REC" lost)"

# 4. funclat on 600 functions of a running program: all attached (exact count), each call of
# R rounds counted, and every breakpoint gone from the program's text once ksight has exited
W=$WORKLOADS/fl_many
R=5
# int3s PID: how many of the flm_* functions start with a breakpoint in the process's memory
int3s() {
	python3 - "$1" "$W" <<'PY'
import re, subprocess, sys
pid, path = sys.argv[1], sys.argv[2]
base = min(int(l.split('-')[0], 16) for l in open(f"/proc/{pid}/maps") if l.rstrip().endswith(path))
syms = [int(l.split()[0], 16) for l in subprocess.run(["nm", path], capture_output=True, text=True).stdout.splitlines()
	if re.search(r" [tT] flm_\d+$", l)]
with open(f"/proc/{pid}/mem", "rb") as m:
	n = 0
	for a in syms:
		m.seek(base + a)
		n += m.read(1) == b"\xcc"
print(n)
PY
}
# fl_many_run GLOB EXPECTED [ENV]: funclat on the functions GLOB matches; checks the count, the calls, the breakpoints
fl_many_run() {
	g_start "$T_TMP/flm" "$W" $R || { t_fail "fl_many" "did not start"; return 1; }
	t0=$(now_ms)
	env ${3:-} "$KSIGHT" funclat "$W:$1" -p "$G_PID" -j -v -n 0 >"$T_TMP/flm.json" 2>"$T_TMP/flm.err" &
	K_PID=$!
	t_wait_for "$T_TMP/flm.err" "tracing" || { t_fail "funclat $1" "did not start: $(cat "$T_TMP/flm.err")"; kill "$G_PID"; return 1; }
	on=$(int3s "$G_PID")
	kill -USR1 "$G_PID"
	t_wait_for "$G_FILE" "^done"
	kill -INT "$K_PID"
	wait "$K_PID"
	rc=$?
	took=$(($(now_ms) - t0))
	off=$(int3s "$G_PID")
	kill -USR1 "$G_PID"
	wait "$G_PID"
	t_eq "funclat $1 ${3:-}: exit 0, $2 functions attached, a breakpoint on each while attached" "0 $2 $2" \
		"$rc $(jq .filters.functions "$T_TMP/flm.json") $on"
	t_eq "funclat $1 ${3:-}: $2 rows of $R calls each, nothing lost" "$2 true 0" \
		"$(jq -r '"\(.rows | length) \(all(.rows[]; .count == '$R')) \(.lost)"' "$T_TMP/flm.json")"
	t_eq "funclat $1 ${3:-}: no breakpoint left in the program after exit" "0" "$off"
}
fl_many_run 'flm_*' 600
t_eq "funclat 600: one uprobe_multi link each way" "1" "$(grep -c 'user functions by uprobe_multi' "$T_TMP/flm.err")"
t_ok "funclat 600: attach, 5 rounds and detach in under 20 s (took ${took} ms; ~2 min with a uprobe each)" test "$took" -lt 20000
# the fallback, on 10 of them (a uprobe each detaches in a grace period: 600 would take minutes)
fl_many_run 'flm_00*' 10 KSIGHT_FEATURES_OFF=uprobe_multi
t_eq "funclat fallback: a uprobe per function" "1" "$(grep -c 'a uprobe per user function' "$T_TMP/flm.err")"

sleep 0.5
t_eq "no leaked programs" "" "$(t_unheld_progs "$START_ID" '^(fl_|ks_record)' | tr '\n' ' ')"
exit $T_FAILED
