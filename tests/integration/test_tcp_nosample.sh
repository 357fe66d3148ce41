# Integration: a tcp row with a failed connect only has no cwnd/ssthresh sample: text shows "-", JSON null, and a recording's report chunks keep it (report -j, --html), not a reading of 0.
. tests/lib.sh
need_root tcp_nosample

tfs=$(awk '$3=="tracefs" {print $2; exit}' /proc/mounts)
if [ -n "$tfs" ] && [ ! -d "$tfs/events/sock/inet_sock_set_state" ]; then
	t_skip tcp_nosample "this kernel has no sock:inet_sock_set_state tracepoint"
	exit 0
fi

# the test's own workload: one connect to a port nothing listens on (refused: SYN_SENT to CLOSE, no segment received)
PORT=$(t_free_port)
CONN="import socket
try: socket.create_connection(('127.0.0.1', $PORT), 5)
except ConnectionRefusedError: pass"
# the four gauges of a row, "absent" for a member missing (jq reads a missing one as null too)
GAUGES='[("cwnd_min", "cwnd_max", "cwnd_last", "ssthresh_last") as $k | if has($k) then .[$k] | tostring else "absent" end] | join(" ")'

# the refused flow's row of each JSON report on stdin
frow() {
	jq -c --arg r "127.0.0.1:$PORT" '.rows[] | select(.remote == $r)'
}

"$KSIGHT" tcp --by flow -n 0 -j -- python3 -c "$CONN" >"$T_TMP/j.json" 2>"$T_TMP/j.err" ||
	t_fail "json: ksight tcp runs" "$(cat "$T_TMP/j.err")"
frow <"$T_TMP/j.json" >"$T_TMP/row.json"
t_eq "json: the refused connect is counted" "0 1" "$(jq -r '"\(.connects) \(.connect_fails)"' "$T_TMP/row.json")"
t_eq "json: no cwnd/ssthresh sample is null, not 0" "null null null null" "$(jq -r "$GAUGES" "$T_TMP/row.json")"

"$KSIGHT" tcp --by flow -n 0 -- python3 -c "$CONN" >"$T_TMP/t.txt" 2>"$T_TMP/t.err" ||
	t_fail "text: ksight tcp runs" "$(cat "$T_TMP/t.err")"
# the row's last four columns are cwnd_min cwnd_max cwnd_last ssthresh_last (the header says so)
t_eq "text: the header ends in the gauges" "cwnd_min cwnd_max cwnd_last ssthresh_last" \
	"$(awk '$1 == "local" { print $(NF-3), $(NF-2), $(NF-1), $NF; exit }' "$T_TMP/t.txt")"
t_eq "text: no cwnd/ssthresh sample shows -, not 0" "- - - -" \
	"$(awk -v r="127.0.0.1:$PORT" '$2 == r { print $(NF-3), $(NF-2), $(NF-1), $NF; exit }' "$T_TMP/t.txt")"

# record --collect: the report chunk is this JSON; its reader must keep the null as no value
"$KSIGHT" record --collect tcp -o "$T_TMP/r.ksr" -- python3 -c "$CONN" 2>"$T_TMP/r.err" ||
	t_fail "record --collect tcp runs" "$(cat "$T_TMP/r.err")"
t_eq "record: report -j keeps null" "null null null null" \
	"$("$KSIGHT" report -j "$T_TMP/r.ksr" | frow | jq -r "$GAUGES")"
t_eq "record: report -j --intervals keeps null in each interval's row" "null null null null" \
	"$("$KSIGHT" report -j --intervals "$T_TMP/r.ksr" | frow | jq -r "$GAUGES" | sort -u)"
t_eq "record: report (the chunk's text) shows -" "- - - -" \
	"$("$KSIGHT" report "$T_TMP/r.ksr" | awk -v r="127.0.0.1:$PORT" '$2 == r { print $(NF-3), $(NF-2), $(NF-1), $NF; exit }')"
# --html reads the chunk's JSON back into rows (src/format/reports.c): the null must stay no value there
"$KSIGHT" report "$T_TMP/r.ksr" --html "$T_TMP/r.html" >/dev/null 2>"$T_TMP/h.err" || t_fail "report --html runs" "$(cat "$T_TMP/h.err")"
t_ok "record: report --html shows - for the gauges" \
	grep -q "127.0.0.1:$PORT</td>.*<td>-</td><td>-</td><td>-</td><td>-</td></tr>" "$T_TMP/r.html"
# diff reads counts and histograms only: a null gauge is no error there
"$KSIGHT" diff -j "$T_TMP/j.json" "$T_TMP/r.ksr" >"$T_TMP/d.json" 2>"$T_TMP/d.err"
t_eq "diff: a report with null gauges reads (exit 0)" "0" "$?"
exit $T_FAILED
