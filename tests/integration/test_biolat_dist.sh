# Integration: biolat's latency distribution against an independent reference (bpftrace, ktime stamps on block_rq_issue/complete) over the same requests.
. tests/lib.sh
need_root biolat_dist
START_ID=$(t_prog_max_id)

if ! command -v bpftrace >/dev/null 2>&1; then
	t_skip "biolat distribution" "no bpftrace to compare with"
	exit 0
fi
. tests/integration/biolat_loop.sh
. tests/integration/dist_ref.sh
loop_setup "biolat distribution"

N=2000
# 64 KiB reads: ~10-20 us each on a loop device in memory, long beside the tolerance's absolute part
BS=65536 # over the first 8 MiB of the 16 MiB device (-s 128)
# the device as the block tracepoints report it: the kernel's dev_t, major << 20 | minor
DEVT=$(awk -F: '{ print $1 * 1048576 + $2 }' "$SYS/dev")

# The reference: the reads of the loop device from block_rq_issue to block_rq_complete, by
# sector (dioload reads one block at a time, so no two are in flight at one sector), stamped
# with bpftrace's nsecs (bpf_ktime_get_ns), each latency counted exactly in a map printed at
# the end (a printf per read can be left unread at the interrupt): a loaded machine
# holds the loop's worker off the CPU for milliseconds, past the top of any linear histogram
# (one up to 250 us reported a 4 ms p90 as 250000).  It attaches after ksight, so on both
# tracepoints its program runs right after ksight's: each stamp is late by ksight's program
# there (~0.1-0.5 us), at both ends alike.
bt_script() {
	cat <<BT
tracepoint:block:block_rq_issue /args->dev == $DEVT && strncmp(args->rwbs, "R", 1) == 0/ { @s[args->sector] = nsecs; }
tracepoint:block:block_rq_complete /args->dev == $DEVT && strncmp(args->rwbs, "R", 1) == 0 && @s[args->sector]/
{ @l[nsecs - @s[args->sector]] = count(); delete(@s[args->sector]); }
END { clear(@s); }
BT
}

# One gated run of N O_DIRECT 64 KiB reads traced by both; sets KS and REF ("count p50 p90").
dist_run() {
	"$WORKLOADS/dioload" -g -r $N -b $BS -s 128 "$LOOP" >"$T_TMP/d.out" &
	D_PID=$!
	t_wait_for "$T_TMP/d.out" "[0-9]" || { echo "dioload: $(cat "$T_TMP/d.out")" >&2; return 1; }
	k_start biolat --disk "$DEV" --by op -j || { echo "ksight: $(cat "$K_ERR")" >&2; kill $D_PID; return 1; }
	bt_start || { kill $D_PID; k_stop; return 1; }
	kill -USR1 $D_PID
	wait $D_PID
	t_interrupt $BT_PID
	k_stop
	REF=$(raw_pcts "$T_TMP/ref.out")
	KS=$(k_jq '[(.rows[] | select(.op == "read") | .latency_ns | .count, .p50, .p90)] | if length == 3 then . else [0, 0, 0] end | map(tostring) | join(" ")')
}

# Tolerances: 5% + ksight's slot (1/16 of the value: its log-linear histogram) + 0.75 us (the
# two programs' order: each tool's stamps are ~0.1-0.5 us apart at each end).  A read is ~10-20 us here: timing from another point (allocation,
# insert) or with another request's stamp would be off by more.
check() {
	set -- $KS $REF
	[ "$1" = $N ] && [ "$4" = $N ] && d_near "$2" "$5" 0.05 750 && d_near "$3" "$6" 0.05 750
}

# a loaded machine can delay one program between the two tools' stamps: one more try
for i in 1 2; do
	dist_run || { t_fail "biolat distribution" "the workload, bpftrace or ksight did not run"; continue; }
	check && break
done
set -- $KS $REF
echo "# reads: ksight count $1 p50 $2 p90 $3; bpftrace count $4 p50 $5 p90 $6 (attempt $i)"
t_eq "reads: ksight's count is the workload's" "$N" "$1"
t_eq "reads: the reference's count is the workload's" "$N" "$4"
d_near "$2" "$5" 0.05 750 && t_pass "reads: p50 $2 within 5% + slot + 0.75 us of reference $5" ||
	t_fail "reads: p50 within 5% + slot + 0.75 us of reference" "$2 vs $5"
d_near "$3" "$6" 0.05 750 && t_pass "reads: p90 $3 within 5% + slot + 0.75 us of reference $6" ||
	t_fail "reads: p90 within 5% + slot + 0.75 us of reference" "$3 vs $6"

sleep 0.5
t_eq "no leaked programs" "" "$(t_unheld_progs "$START_ID" '^bl_' | tr '\n' ' ')"
