# Integration: a `ksight report --perfetto` timeline loaded by a real consumer, the DevTools performance engine (@paulirish/trace_engine in Node).
. tests/lib.sh
need_root perfetto_engine

: "${KS_NODE_MODULES:=/opt/ksight-node/node_modules}"
export KS_NODE_MODULES
if ! command -v node >/dev/null || [ ! -d "$KS_NODE_MODULES/@paulirish/trace_engine" ]; then
	t_skip "perfetto_engine" "node or @paulirish/trace_engine missing under $KS_NODE_MODULES (scripts/setup.sh installs them)"
	exit 0
fi
K=200
REC=$T_TMP/s.ksr
P=$T_TMP/p.json

# a sleeper switching out and in K times, among whatever else runs
g_start "$T_TMP/sl" "$WORKLOADS/sleeper" -k $K -m 2
k_start record -e sched:sched_switch -e sched:sched_wakeup -o "$REC"
kill -USR1 "$G_PID"
t_wait_for "$G_FILE" "^done" || echo "sleeper did not finish" >&2
k_stop
kill -USR1 "$G_PID"
wait "$G_PID"
"$KSIGHT" report "$REC" --perfetto "$P" >/dev/null
t_eq "perfetto: written" "0" "$?"
node tests/integration/trace_engine_check.mjs "$P" "$G_PID" >"$T_TMP/seen.json" 2>"$T_TMP/node.err"
t_eq "engine: parses the file" "0" "$?"
[ -s "$T_TMP/node.err" ] && sed 's/^/# node: /' "$T_TMP/node.err" | head -5

t_eq "engine: a generic trace (not a browser's), no warnings" "true 0" "$(jq -r '"\(.generic) \(.warnings)"' "$T_TMP/seen.json")"
jq -c '[.traceEvents[] | select(.ph == "M" and .name == "thread_name") | {(.tid | tostring): .args.name}] | add' "$P" >"$T_TMP/names.json"
t_eq "engine: every thread with slices has the name ksight gave it" "true" \
	"$(jq --slurpfile n "$T_TMP/names.json" '[.threads[] | select(.slices > 0) | .name == $n[0][.tid | tostring]] | length > 0 and all' "$T_TMP/seen.json")"
t_eq "engine: the sleeper is a thread track of its own process, named sleeper" "[$G_PID,$G_PID,\"sleeper\"]" \
	"$(jq -c "[.threads[] | select(.tid == $G_PID) | [.pid, .tid, .name]] | .[0]" "$T_TMP/seen.json")"
t_eq "engine: its process named sleeper" "sleeper" "$(jq -r ".process_names[\"$G_PID\"]" "$T_TMP/seen.json")"
t_eq "engine: every running slice of every thread" \
	"$(jq -c '[.traceEvents[] | select(.ph == "X")] | group_by(.tid) | map([.[0].tid, length])' "$P")" \
	"$(jq -c '[.threads[] | select(.slices > 0) | [.tid, .slices]] | sort_by(.[0])' "$T_TMP/seen.json")"
t_eq "engine: slices side by side, none nested (a thread runs on one CPU at a time)" "true" \
	"$(jq '[.threads[] | .roots == .slices] | all' "$T_TMP/seen.json")"
t_eq "timestamps: microseconds with exactly 3 decimals, from the ns" "0" \
	"$(grep -oE '"(ts|dur)":[0-9.e+-]+' "$P" | grep -cvE '"(ts|dur)":[0-9]+\.[0-9]{3}$')"
# the sleeper's slices, as the engine holds them, against the recorded events: each starts at one
# of its switch-ins and ends at the time of the next event on that CPU, to the nanosecond
"$KSIGHT" report -j "$REC" >"$T_TMP/ev.jsonl"
jq -s -c --argjson g "$G_PID" '
	[.[] | select(.event == "sched:sched_switch" and .fields.next_pid == $g) | .ts_ns] as $in
	| [.[] | .ts_ns] as $all | {in: $in, all: $all}' "$T_TMP/ev.jsonl" >"$T_TMP/sw.json"
t_eq "engine: every sleeper slice starts at its switch-in and ends at a recorded event, exactly" "true" \
	"$(jq --slurpfile sw "$T_TMP/sw.json" '($sw[0].in | map({(tostring): 1}) | add) as $in
		| ($sw[0].all | map({(tostring): 1}) | add) as $all
		| [.of[] | ((.[0] * 1000 | round) | tostring) as $s | (((.[0] + .[1]) * 1000 | round) | tostring) as $e
		   | ($in[$s] == 1) and ($all[$e] == 1)] | length > 0 and all' "$T_TMP/seen.json")"
n=$(jq .named "$T_TMP/seen.json")
t_eq "engine: the sleeper's slices, as written" \
	"$(jq "[.traceEvents[] | select(.ph == \"X\" and .tid == $G_PID)] | length" "$P")" "$n"
lost=$("$KSIGHT" info -j "$REC" | jq -r .trailer.lost)
if [ "$lost" = 0 ]; then
	# 9 in 10 at least: on a host busy with other BPF users, a few wakeup+switch-in pairs of the
	# sleeper do not reach the program (lost 0, missed 0; seen 1-8% here, cause not found yet)
	t_ok "engine: the sleeper's slices, about one per sleep ($n for $K sleeps)" [ "$n" -ge $((K * 9 / 10)) -a "$n" -le $((K * 3 + 10)) ]
else
	t_skip "engine: one slice per sleep" "$lost events lost on this loaded host: slices may be missing"
fi
t_eq "engine: busy time per thread within the recording's span" "true" \
	"$(jq '.bounds.range as $r | [.threads[] | .dur_us <= $r * 1.000001] | all' "$T_TMP/seen.json")"
t_eq "engine: the bounds are the file's slices" "true" \
	"$(jq --slurpfile s "$T_TMP/seen.json" '[.traceEvents[] | select(.ph == "X") | .ts] | min as $m | ($s[0].bounds.min - $m) | fabs < 0.001' "$P")"
