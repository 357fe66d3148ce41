# Integration: `ksight record --filter` keeps exactly the events whose fields match (tested in the kernel, the rest counted as filtered), per event; `report --filter` agrees at read time; bad filters exit 2 with a caret before anything attaches.
. tests/lib.sh
need_root record_filter

N=20000
M=300
REC=$T_TMP/rec.ksr
tr_val() { "$KSIGHT" info -j "$1" | jq -r ".trailer.$2"; }
ids() { "$KSIGHT" report -j "$@" | jq -rs 'map(.fields.id) | group_by(.) | map("\(.[0])x\(length)") | join(" ")'; }

# 1. exact N: N getppid (110) and M close (3) of one process; only the getppids are kept
w_start -n $N -e $M
k_start record -e raw_syscalls:sys_enter --filter 'id == 110' -p "$W_PID" -o "$REC"
w_go
wait "$K_PID"
t_eq "id == 110: record exits 0 when the process ends" "0" "$?"
t_eq "id == 110: exactly the N getppid, nothing else" "110x$N" "$(ids "$REC")"
t_eq "id == 110: in order, all of the workload" "true" \
	"$("$KSIGHT" report -j "$REC" | jq -s ". as \$a | all(.pid == $W_PID) and ([range(1; length)] | all(\$a[.].ts_ns >= \$a[. - 1].ts_ns))")"
info=$("$KSIGHT" info -j "$REC")
t_eq "id == 110: produced = filtered + recorded, nothing lost" "yes 0" \
	"$(echo "$info" | jq -r '.trailer | "\(.exact) \(.lost)"')"
t_ok "id == 110: the M close (and the rest) counted as filtered ($(echo "$info" | jq -r .trailer.filtered))" \
	[ "$(echo "$info" | jq -r .trailer.filtered)" -ge $M ]
t_eq "id == 110: per CPU, produced = filtered + sampled + recorded + lost" "true" \
	"$(echo "$info" | jq '[.trailer | to_entries[] | select(.key | startswith("cpu.")) | .value | split(" ") | map(tonumber) | .[0] == .[5] + .[1] + .[2] + .[3]] | all')"
t_eq "id == 110: the manifest keeps the filter" "id == 110" "$(echo "$info" | jq -r .manifest.filter)"

# 2. one filter for two events (both have id): N enters and N exits; && binds tighter than ||
w_start -n $N -e $M
k_start record -e 'raw_syscalls:sys_e*' --filter 'id == 110 || id == 3 && common_pid == 0' -p "$W_PID" -o "$REC"
w_go
wait "$K_PID"
"$KSIGHT" report -j "$REC" >"$T_TMP/two.jsonl"
t_eq "two events: N enters and N exits of getppid, no close" "$N $N 0" \
	"$(jq -rs '"\(map(select(.event == "raw_syscalls:sys_enter" and .fields.id == 110)) | length) \(map(select(.event == "raw_syscalls:sys_exit" and .fields.id == 110)) | length) \(map(select(.fields.id == 3)) | length)"' "$T_TMP/two.jsonl")"

# an array element and a bit test: close(-1) has bit 31 of args[0] set
w_start -n $N -e $M
k_start record -e raw_syscalls:sys_enter --filter 'id == 3 && args[0] & 0x80000000' -p "$W_PID" -o "$REC"
w_go
wait "$K_PID"
t_eq "args[0] & bit: exactly the M close(-1)" "3x$M" "$(ids "$REC")"

# --sample after --filter: one in 10 of the matching events (per CPU), the rest counted
w_start -n $N -e $M
k_start record -e raw_syscalls:sys_enter --filter 'id == 110' --sample 10 -p "$W_PID" -o "$REC"
w_go
wait "$K_PID"
info=$("$KSIGHT" info -j "$REC")
t_eq "filter + sample: about N/10 getppid kept, the rest sampled out, all counted" "true yes" \
	"$(echo "$info" | jq -r ".trailer | ((.recorded | tonumber) as \$r | \$r >= $N / 10 - 2 and \$r <= $N / 10 + 2 and (.sampled_out | tonumber) + \$r == $N) as \$ok | \"\(\$ok) \(.exact)\"")"

# 3. strings: the task's comm (equality, globs) and a dynamic string field
name=ksf$$
w_start -n 1000 -c "$name"
k_start record -e raw_syscalls:sys_enter --filter "comm == \"$name\" && id == 110" -o "$REC"
w_go
sleep 0.3
k_stop
t_eq "comm == NAME: its N getppid, system-wide" "1000 true" \
	"$("$KSIGHT" report -j "$REC" | jq -rs "\"\(length) \(all(.comm == \"$name\"))\"")"
w_start -n 1000 -c "$name"
k_start record -e raw_syscalls:sys_enter --filter "comm ~ \"k?f*\" && comm ~ \"*$$\" && !(id != 110)" -o "$REC"
w_go
sleep 0.3
k_stop
t_eq "comm ~ glob: its N getppid" "1000" "$("$KSIGHT" report -j "$REC" | jq -s "map(select(.comm == \"$name\")) | length")"
t_eq "comm ~ glob: only names the glob takes" "true" \
	"$("$KSIGHT" report -j "$REC" | jq -s 'all(.comm | test("^k.f.*'$$'$"))')"

# sched_process_exec's filename (__data_loc char[]): K runs of a copy of true with a unique name, K of false
K=7
cp /bin/true "$T_TMP/ksft_true_$$"
k_start record -e sched:sched_process_exec --filter "filename ~ \"*/ksft_tru?_$$\"" -o "$REC"
i=0
while [ $i -lt $K ]; do "$T_TMP/ksft_true_$$"; /bin/false; i=$((i + 1)); done
sleep 0.3
k_stop
t_eq "filename ~ glob (dynamic string): exactly the K runs, nothing else" "$K $K" \
	"$("$KSIGHT" report -j "$REC" | jq -s "map(select(.fields.filename == \"$T_TMP/ksft_true_$$\")) | length") $("$KSIGHT" report -j "$REC" | wc -l)"

# a char array field: sched_switch's prev_comm
k_start record -e sched:sched_switch --filter "prev_comm == \"$name\"" -o "$REC"
cp "$(command -v sleep)" "$T_TMP/$name"
"$T_TMP/$name" 0.1
"$T_TMP/$name" 0.1
k_stop
t_ok "prev_comm == NAME (char array): its switches, only its ($("$KSIGHT" info -j "$REC" | jq .events_total))" \
	[ "$("$KSIGHT" report -j "$REC" | jq -s "length > 0 and all(.fields.prev_comm == \"$name\")")" = true ]

# 4. report --filter: the same verdicts at read time, on an unfiltered recording
w_start -n $N -e $M
k_start record -e raw_syscalls:sys_enter -p "$W_PID" -o "$REC"
w_go
wait "$K_PID"
t_eq "report --filter id == 110: the N getppid" "110x$N" "$(ids --filter 'id == 110' "$REC")"
t_eq "report --filter: != and ranges" "3x$M" "$(ids --filter 'id != 110 && id >= 3 && id <= 3' "$REC")"
t_eq "report --filter with --csv: header + N rows" "$((N + 1))" "$("$KSIGHT" report --csv --filter 'id == 110' "$REC" | wc -l)"
"$KSIGHT" report --filter 'idd == 110' "$REC" >/dev/null 2>"$T_TMP/e"
t_eq "report --filter unknown field: exit 2, caret under it" "2 1" "$? $(grep -cx '  ^' "$T_TMP/e")"

# 5. bad filters: exit 2, the offending token under a caret, no file, nothing attached
before=$T_TMP/orphans
t_orphans >"$before"
bad() { # NAME EXPR COLUMN MESSAGE [EVENTS...]
	_n=$1 _x=$2 _c=$3 _m=$4
	shift 4
	rm -f "$REC"
	"$KSIGHT" record ${*:--e raw_syscalls:sys_enter} --filter "$_x" -o "$REC" -d 5 2>"$T_TMP/e"
	_rc=$?
	_caret=$(printf '%*s^' $((_c + 2)) '') # the text is echoed indented by two
	t_eq "bad filter, $_n: exit 2, message, caret at $_c, no file" "2 1 1 no" \
		"$_rc $(grep -c "$_m" "$T_TMP/e") $(grep -cxF "$_caret" "$T_TMP/e") $([ -e "$REC" ] && echo yes || echo no)"
}
bad "unknown field" 'id == 110 && nope > 2' 13 "unknown field 'nope' in raw_syscalls:sys_enter"
bad "bad token" 'id = 110' 3 "'=' is not an operator"
bad "type mismatch" 'id == "x"' 6 "type mismatch"
bad "string op on an integer" 'id ~ 3' 3 "'~' is for strings"
bad "unclosed parenthesis" '(id == 1 || id == 2' 0 "'(' not closed"
bad "field missing in one of the events" 'next_pid == 1' 0 "unknown field 'next_pid' in sched:sched_wakeup" \
	-e sched:sched_switch -e sched:sched_wakeup
bad "out of range" 'common_flags == 300' 16 "out of range"
t_no_leaks "bad filters: nothing attached" "$before"
t_no_leaks ks_record
