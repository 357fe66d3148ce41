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
node tests/integration/trace_engine_check.mjs "$P" "sleeper $G_PID" >"$T_TMP/seen.json" 2>"$T_TMP/node.err"
t_eq "engine: parses the file" "0" "$?"
[ -s "$T_TMP/node.err" ] && sed 's/^/# node: /' "$T_TMP/node.err" | head -5

t_eq "engine: a generic trace (not a browser's), no warnings" "true 0" "$(jq -r '"\(.generic) \(.warnings)"' "$T_TMP/seen.json")"
t_eq "engine: one thread per CPU track, named as ksight named them" \
	"$(jq -c '[.traceEvents[] | select(.ph == "M" and .name == "thread_name") | {tid, name: .args.name}] | sort_by(.tid)' "$P")" \
	"$(jq -c '[.threads[] | {tid, name}] | sort_by(.tid)' "$T_TMP/seen.json")"
t_eq "engine: every running slice of every CPU" \
	"$(jq -c '[.traceEvents[] | select(.ph == "X")] | group_by(.tid) | map([.[0].tid, length])' "$P")" \
	"$(jq -c '[.threads[] | select(.slices > 0) | [.tid, .slices]] | sort_by(.[0])' "$T_TMP/seen.json")"
t_eq "engine: slices side by side, none nested (one task at a time on a CPU)" "true" \
	"$(jq '[.threads[] | .roots == .slices] | all' "$T_TMP/seen.json")"
n=$(jq .named "$T_TMP/seen.json")
t_eq "engine: the sleeper's slices, as written" \
	"$(jq "[.traceEvents[] | select(.ph == \"X\" and .name == \"sleeper $G_PID\")] | length" "$P")" "$n"
lost=$("$KSIGHT" info -j "$REC" | jq -r .trailer.lost)
if [ "$lost" = 0 ]; then
	# 9 in 10 at least: on a host busy with other BPF users, a few wakeup+switch-in pairs of the
	# sleeper do not reach the program (lost 0, missed 0; seen 1-8% here, cause not found yet)
	t_ok "engine: the sleeper's slices, about one per sleep ($n for $K sleeps)" [ "$n" -ge $((K * 9 / 10)) -a "$n" -le $((K * 3 + 10)) ]
else
	t_skip "engine: one slice per sleep" "$lost events lost on this loaded host: slices may be missing"
fi
t_eq "engine: busy time per CPU within the recording's span" "true" \
	"$(jq '.bounds.range as $r | [.threads[] | .dur_us <= $r * 1.000001] | all' "$T_TMP/seen.json")"
t_eq "engine: the bounds are the file's slices" "true" \
	"$(jq --slurpfile s "$T_TMP/seen.json" '[.traceEvents[] | select(.ph == "X") | .ts] | min as $m | ($s[0].bounds.min - $m) | fabs < 0.001' "$P")"
