# Integration: `ksight record --flight SIZE --trigger EXPR` keeps events in memory and writes only the window around the marker event (--before/--after), once or (--trigger-all) for every marker; every event is still accounted for.
. tests/lib.sh
need_root record_flight

REC=$T_TMP/rec.ksr
# marker-relative span of the file's events, in ms: "markers first_ms last_ms" (first/last from the first/last marker)
span() {
	"$KSIGHT" report -j "$1" | jq -rs '(map(select(.fields.id == 3)) | map(.ts_ns)) as $m |
		"\($m | length) \((.[0].ts_ns - $m[0]) / 1e6 | floor) \((.[-1].ts_ns - $m[-1]) / 1e6 | ceil)"'
}

# 1. the first trigger: a getppid (and a nanosleep) every ms, close(-77) at 1.5 s.  The recorder
# may see the marker only at its next drain (up to a second later), then waits 0.2 s past the
# window: the workload runs 10 s, so that "before the workload ends" holds on a slow machine too,
# and is stopped once that was checked
g_start "$T_TMP/g1" "$WORKLOADS/flightload" -t 10000 -m 1500
k_start record -e raw_syscalls:sys_enter -p "$G_PID" --flight 1M --trigger 'id == 3' --before 0.5 --after 0.3 -o "$REC"
kill -USR1 "$G_PID"
wait "$K_PID"
rc=$?
alive=$(kill -0 "$G_PID" 2>/dev/null && echo yes || echo no)
kill "$G_PID" 2>/dev/null
wait "$G_PID"
t_eq "first trigger: record exits 0 after the window, before the workload ends" "0 yes" "$rc $alive"
read -r marks first last <<EOF2
$(span "$REC")
EOF2
t_eq "first trigger: the marker is in the file, once" "1" "$marks"
# events every ~1 ms: the window's edges are within 100 ms of what was asked, never outside
t_in "first trigger: the window starts 0.5 s before it ($first ms)" -500 -400 "$first"
t_in "first trigger: and ends 0.3 s after it ($last ms)" 200 300 "$last"
info=$("$KSIGHT" info -j "$REC")
t_eq "first trigger: written + outside = recorded, exact, the file holds the written" "1 yes true true" \
	"$(echo "$info" | jq -r '.trailer as $t | "\($t["flight.triggers"]) \($t.exact) \(($t["flight.written"] | tonumber) + ($t["flight.dropped"] | tonumber) == ($t.recorded | tonumber)) \(.events_total == ($t["flight.written"] | tonumber))"')"
# the trailer's file.events is the events in the file (it said 0 for every flight recording)
t_eq "first trigger: file.events = flight.written = events in the file, no count mismatch" "true false" \
	"$(echo "$info" | jq -r '"\((.trailer["file.events"] | tonumber) == (.trailer["flight.written"] | tonumber) and .events_total == (.trailer["file.events"] | tonumber)) \(.count_mismatch)"')"
t_eq "first trigger: the manifest says how it was made" "id == 3 0.5" \
	"$(echo "$info" | jq -r '"\(.manifest["flight.trigger"]) \(.manifest["flight.before_s"])"')"

# 2. --trigger-all: two markers 1 s apart, a window of +-0.2 s around each, nothing between
g_start "$T_TMP/g2" "$WORKLOADS/flightload" -t 3000 -m 1000 -m 2000
k_start record -e raw_syscalls:sys_enter -p "$G_PID" --flight 1M --trigger 'id == 3' --trigger-all --before 0.2 --after 0.2 -o "$REC"
kill -USR1 "$G_PID"
wait "$K_PID"
t_eq "trigger-all: record exits 0 with the workload" "0" "$?"
t_eq "trigger-all: two windows" "2" "$("$KSIGHT" info -j "$REC" | jq -r '.trailer["flight.triggers"]')"
t_eq "trigger-all: every event within 0.2 s of a marker, and both windows filled" "2 true true true" \
	"$("$KSIGHT" report -j "$REC" | jq -rs '(map(select(.fields.id == 3)) | map(.ts_ns)) as $m |
		"\($m | length) \(all(.ts_ns as $t | $m | any(($t - .) | fabs <= 2e8))) \(map(select(.ts_ns < $m[0] - 1e8)) | length > 0) \(map(select(.ts_ns > $m[1] + 1e8)) | length > 0)"')"

# markers 0.5 s apart: the recorder drains the rings about once a second, so two markers (and the
# events of both windows) mostly come out in one batch; each still gets its whole window
g_start "$T_TMP/g2b" "$WORKLOADS/flightload" -t 3000 -m 1000 -m 1500 -m 2000
k_start record -e raw_syscalls:sys_enter -p "$G_PID" --flight 1M --trigger 'id == 3' --trigger-all --before 0.2 --after 0.2 -o "$REC"
kill -USR1 "$G_PID"
wait "$K_PID"
t_eq "trigger-all, markers 0.5 s apart: exit 0, three windows" "0 3" \
	"$? $("$KSIGHT" info -j "$REC" | jq -r '.trailer["flight.triggers"]')"
t_eq "trigger-all, markers 0.5 s apart: three markers, every event within 0.2 s of one, each window filled on both sides" \
	"3 true true" \
	"$("$KSIGHT" report -j "$REC" | jq -rs '. as $ev | (map(select(.fields.id == 3)) | map(.ts_ns)) as $m |
		"\($m | length) \(all(.ts_ns as $t | $m | any(($t - .) | fabs <= 2e8))) \($m | all(. as $k |
			($ev | any(.ts_ns < $k - 1e8 and .ts_ns >= $k - 2e8)) and ($ev | any(.ts_ns > $k + 1e8 and .ts_ns <= $k + 2e8))))"')"

# SIZE bounds what waits: at ~10000 events a second, 64K of memory cannot hold 2 s before the
# trigger (the newest chunk stays, so about what one chunk holds), 16M can
for size in 64K 16M; do
	g_start "$T_TMP/g5$size" "$WORKLOADS/flightload" -t 3500 -i 100 -m 3000
	k_start record -e raw_syscalls:sys_enter -p "$G_PID" --flight $size --trigger 'id == 3' --before 2 --after 0.1 -o "$REC.$size"
	kill -USR1 "$G_PID"
	wait "$K_PID"
	wait "$G_PID"
done
read -r _ small _ <<EOF2
$(span "$REC.64K")
EOF2
read -r _ big _ <<EOF2
$(span "$REC.16M")
EOF2
t_ok "--flight 64K: less than the 2 s before the trigger kept ($small ms)" [ "$small" -gt -1900 ]
t_in "--flight 16M: the whole 2 s kept ($big ms)" -2000 -1900 "$big"

# a trigger just before the end (the workload exits inside the window): what there is, is written
g_start "$T_TMP/g4" "$WORKLOADS/flightload" -t 700 -m 600
k_start record -e raw_syscalls:sys_enter -p "$G_PID" --flight 1M --trigger 'id == 3' --before 0.3 --after 5 -o "$REC"
kill -USR1 "$G_PID"
wait "$K_PID"
rc=$?
read -r marks first last <<EOF2
$(span "$REC")
EOF2
t_eq "trigger at the end: exit 0, the marker written" "0 1" "$rc $marks"
t_in "trigger at the end: with the 0.3 s before it ($first ms)" -300 -200 "$first"

# 3. no trigger: the file has no events, and says so
g_start "$T_TMP/g3" "$WORKLOADS/flightload" -t 500
k_start record -e raw_syscalls:sys_enter -p "$G_PID" --flight 1M --trigger 'id == 3' -o "$REC"
kill -USR1 "$G_PID"
wait "$K_PID"
t_eq "no trigger: exit 0, no events written, all counted outside" "0 0 true" \
	"$? $("$KSIGHT" info -j "$REC" | jq -r '"\(.events_total) \(.trailer["flight.dropped"] == .trailer.recorded)"')"

# 4. --trigger-latency: the workload's one long syscall (a 150 ms sleep at 1 s; the others are a
# getppid and a 1 ms sleep, which this shared machine once stretched to 39 ms) is the trigger;
# the window reaches back to its start although --before is 10 ms.  long_pairs FILE: syscalls
# over 100 ms in the file, with both their ends: how many, and the first's distance from the
# file's first event and to its last (ms)
LAT='raw_syscalls:sys_enter/raw_syscalls:sys_exit common_pid>100ms'
long_pairs() {
	# a sys_exit right after the sys_enter of the same syscall, 100 to 300 ms later: not the gap
	# between two windows (0.4 s at least below)
	"$KSIGHT" report -j "$1" | jq -rs 'map(select(.event | test("^raw_syscalls:sys_e"))) as $e |
		[range(1; $e | length) | select($e[.].event == "raw_syscalls:sys_exit" and
			$e[. - 1].event == "raw_syscalls:sys_enter" and $e[.].fields.id == $e[. - 1].fields.id and
			$e[.].ts_ns - $e[. - 1].ts_ns > 1e8 and $e[.].ts_ns - $e[. - 1].ts_ns < 3e8) |
			"\(($e[. - 1].ts_ns - $e[0].ts_ns) / 1e6 | floor) \(($e[-1].ts_ns - $e[.].ts_ns) / 1e6 | ceil)"] |
		"\(length) \(.[0] // "- -")"'
}
g_start "$T_TMP/gl1" "$WORKLOADS/flightload" -t 3000 -l 150 -m 1000
k_start record -p "$G_PID" --flight 1M --trigger-latency "$LAT" --before 0.01 --after 0.1 -o "$REC"
kill -USR1 "$G_PID"
wait "$K_PID"
rc=$?
kill "$G_PID" 2>/dev/null
wait "$G_PID"
read -r nlong from_start to_end <<EOF2
$(long_pairs "$REC")
EOF2
t_eq "trigger-latency: exit 0, one window, one latency over 100 ms, both of its events in the file" "0 1 1 1" \
	"$rc $("$KSIGHT" info -j "$REC" | jq -r '.trailer | "\(.["flight.triggers"]) \(.["flight.latency_over"])"') $nlong"
t_eq "trigger-latency: the window starts at the long sleep's start (not 10 ms before its end)" "0" "$from_start"
t_in "trigger-latency: and ends 0.1 s after its end ($to_end ms)" 50 100 "$to_end"
info=$("$KSIGHT" info -j "$REC")
t_eq "trigger-latency: the manifest has the spec" "$LAT" "$(echo "$info" | jq -r '.manifest["flight.trigger_latency"]')"
t_eq "trigger-latency: written + outside = recorded, exact, no trigger dropped" "yes true 0" \
	"$(echo "$info" | jq -r '.trailer as $t | "\($t.exact) \(($t["flight.written"] | tonumber) + ($t["flight.dropped"] | tonumber) == ($t.recorded | tonumber)) \($t["flight.triggers_dropped"])"')"
# rerun repeats it from the manifest's arguments (without -p: rerun refuses a task that is gone)
"$KSIGHT" record --flight 1M --trigger-latency "$LAT" --before 0.01 --after 0.1 -d 0.5 -o "$REC.sys" 2>"$T_TMP/e"
"$KSIGHT" rerun "$REC.sys" -d 0.5 -o "$REC.re" 2>"$T_TMP/e"
t_eq "trigger-latency: rerun exits 0 and records with the same spec" "0 $LAT" \
	"$? $("$KSIGHT" info -j "$REC.re" | jq -r '.manifest["flight.trigger_latency"]')"

# --trigger-all: three long sleeps 1 s apart, three windows, each with its long pair; with
# --trigger too (either triggers), the close(-77) markers fall in the same windows.  The close
# just before each sleep opens the window: --after 0.45 keeps the sleep's end (the latency
# trigger) inside it however late the sleep ends (on an emulated CPU one ended past 0.2 s and
# made a fourth window); the gap to the next window stays over long_pairs' 0.3 s.
g_start "$T_TMP/gl2" "$WORKLOADS/flightload" -t 3300 -l 150 -m 500 -m 1500 -m 2500
k_start record -p "$G_PID" --flight 1M --trigger-latency "$LAT" --trigger 'id == 3' --trigger-all --before 0.05 --after 0.45 -o "$REC"
kill -USR1 "$G_PID"
wait "$K_PID"
t_eq "trigger-latency --trigger-all: exit 0, three windows, three latencies over 100 ms, all in the file" "0 3 3 3" \
	"$? $("$KSIGHT" info -j "$REC" | jq -r '.trailer | "\(.["flight.triggers"]) \(.["flight.latency_over"])"') $(long_pairs "$REC" | cut -d' ' -f1)"

# 5. bad usage: exit 2, nothing made
rm -f "$REC"
"$KSIGHT" record -e raw_syscalls:sys_enter --flight 1M -o "$REC" -d 1 2>"$T_TMP/e"
t_eq "--flight without --trigger: exit 2" "2 1" "$? $(grep -c 'needs --trigger' "$T_TMP/e")"
"$KSIGHT" record -e raw_syscalls:sys_enter --trigger 'id == 3' -o "$REC" -d 1 2>"$T_TMP/e"
t_eq "--trigger without --flight: exit 2" "2 1" "$? $(grep -c 'works with --flight' "$T_TMP/e")"
"$KSIGHT" record -e raw_syscalls:sys_enter -e sched:sched_switch --flight 1M --trigger 'nope == 3' -o "$REC" -d 1 2>"$T_TMP/e"
t_eq "--trigger on a field no event has: exit 2 with a caret" "2 1 1" \
	"$? $(grep -c "invalid --trigger at column 1: unknown field 'nope'" "$T_TMP/e") $(grep -cx '  ^' "$T_TMP/e")"
"$KSIGHT" record -e raw_syscalls:sys_enter --flight 1K --trigger 'id == 3' -o "$REC" -d 1 2>"$T_TMP/e"
t_eq "--flight below 4K: exit 2" "2" "$?"
for bad in 'raw_syscalls:sys_enter raw_syscalls:sys_exit common_pid>20ms|expected .START/END KEYS>DURATION' \
	'raw_syscalls:sys_enter/raw_syscalls:sys_exit common_pid>20|duration .20.: expected a time' \
	'raw_syscalls:sys_enter/raw_syscalls:sys_exit common_pid>0ms|duration .0ms.: expected a time' \
	'raw_syscalls:sys_enter/raw_syscalls:nope common_pid>1ms|no tracepoint matches .raw_syscalls:nope' \
	'raw_syscalls:sys_*/raw_syscalls:sys_exit common_pid>1ms|must be one event' \
	'raw_syscalls:sys_enter/raw_syscalls:sys_exit id=nope>1ms|sys_exit has no field .nope'; do
	"$KSIGHT" record --flight 1M --trigger-latency "${bad%|*}" -o "$REC" -d 1 2>"$T_TMP/e"
	t_eq "--trigger-latency '${bad%|*}': exit 2, one line" "2 1 1" "$? $(wc -l <"$T_TMP/e") $(grep -c "${bad#*|}" "$T_TMP/e")"
done
"$KSIGHT" record --trigger-latency "$LAT" -o "$REC" -d 1 2>"$T_TMP/e"
t_eq "--trigger-latency without --flight: exit 2" "2 1" "$? $(grep -c 'works with --flight' "$T_TMP/e")"
t_eq "bad usage: no file made" "no" "$([ -e "$REC" ] && echo yes || echo no)"
t_no_leaks ks_record
