# Integration: what `ksight funclat` does per call and at start-up: a thread's record of a function is kept between its calls (a lookup at each end, no insert and delete per call), and start-up makes no uprobe of its own (closing one waits for a grace period: 116 ms to attached, 49 without).
. tests/lib.sh
need_root funclat_cost
START_ID=$(t_prog_max_id)
W=$WORKLOADS/fl_calls
[ -x "$W" ] || { t_fail "workload" "no $W (make all)"; exit 1; }
# a copy of its own: the uprobes are on the file, and a bench or test running fl_calls meanwhile
# would add its calls and threads
BIN=$T_TMP/fl_calls_cost
cp "$W" "$BIN"
W=$BIN
N=5000

# 1. N calls of one thread: all counted and timed, and one record left in the in-flight map, at
# depth 0 (the old code deleted it at each return and made it again at the next entry)
k_start funclat "$BIN:fl_tiny_a" -j || { t_fail "funclat" "did not start"; exit 1; }
"$W" $N 0 tight >"$T_TMP/w.out"
t_eq "workload: $N calls" "tight" "$(cut -d' ' -f1 "$T_TMP/w.out")"
STARTS=""
for id in $(awk '$1 == "map_id:" { print $2 }' /proc/"$K_PID"/fdinfo/* 2>/dev/null | sort -un); do
	[ "$(bpftool -j map show id "$id" 2>/dev/null | jq -r .name)" = starts ] && STARTS=$id
done
if [ -n "$STARTS" ]; then
	bpftool -j map dump id "$STARTS" >"$T_TMP/starts.json" 2>&1
	t_eq "one record kept for the thread's $N calls, at depth 0" "1 0" \
		"$(jq -r '"\(length) \([.[] | .formatted.value.depth // .value.depth] | max)"' "$T_TMP/starts.json")"
else
	t_fail "the in-flight map" "no map named starts among ksight's"
fi
k_stop
t_eq "fl_tiny_a: $N calls, $N timed, nothing lost" "$N $N 0" \
	"$(k_jq '(.rows[] | select(.function == "fl_tiny_a") | "\(.count) \(.latency_ns.count)") + " \(.lost)"')"

# 2. start-up: the only uprobe links made are funclat's own (entry and return, one each where the
# kernel has uprobe_multi; perf-event uprobes otherwise), none for the feature probe
if command -v strace >/dev/null; then
	strace -f -e trace=bpf -o "$T_TMP/st" "$KSIGHT" funclat "$BIN:fl_tiny_a" -d 0.01 -v >/dev/null 2>"$T_TMP/st.err"
	t_eq "under strace: exit 0" "0" "$?"
	WANT=0
	grep -q "by uprobe_multi" "$T_TMP/st.err" && WANT=2
	t_eq "uprobe_multi links made: $WANT (funclat's own)" "$WANT" \
		"$(grep -E 'BPF_LINK_CREATE.*attach_type=(0x30|BPF_TRACE_UPROBE_MULTI)' "$T_TMP/st" | grep -cE '= [0-9]+ *$')"
else
	t_skip "start-up links" "no strace"
fi
sleep 0.5
t_eq "no leaked programs" "" "$(t_unheld_progs "$START_ID" '^fl_' | tr '\n' ' ')"
exit $T_FAILED
