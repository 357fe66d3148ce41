# Integration: net's per-stage distributions (send, qdisc, xmit, rx, read) against an independent reference (bpftrace stamping the same events by skb, and by socket queue for UDP's reads) over the same datagrams through a tbf qdisc: counts exact, p50/p90/p99 within ksight's slot.
. tests/lib.sh
need_root net_dist
START_ID=$(t_prog_max_id)

if ! command -v bpftrace >/dev/null 2>&1 || ! command -v tc >/dev/null 2>&1; then
	t_skip "net distribution" "no bpftrace to compare with, or no tc (iproute2)"
	exit 0
fi
# rx and UDP's read stages need sock:sk_data_ready (6.10) and sock:sock_recv_length (6.4)
tfs=$(awk '$3=="tracefs" {print $2; exit}' /proc/mounts)
STAGES="send qdisc xmit rx read"
for tp in sock/sk_data_ready sock/sock_recv_length; do
	[ -n "$tfs" ] && [ ! -d "$tfs/events/$tp" ] && STAGES="send qdisc xmit"
done
. tests/integration/dist_ref.sh
t_netns_pair net_dist
A=$NS_A B=$NS_B DA=$NS_DA DB=$NS_DB NET=$NS_NET

# The workload: K datagrams of S bytes (W on the wire) sent at once into a tbf qdisc of R
# bytes/s on A's side: the i-th waits about i ms in the qdisc, a spread from 0 to 200 ms.
# B's receiver sleeps 1.5 ms once a datagram is queued before it reads it: datagrams arrive
# every ms and are read every 1.5, so the i-th waits about 1.5 + 0.5 * i ms in the socket's
# queue (at most ~70 queued: within the default receive buffer).  Sends take microseconds,
# the driver and the receive a few.  200 of each: a p99 that is not the largest one.
K=200
S=200
W=$((S + 42))
R=$((W * 1000))
tc -n "$A" qdisc add dev "$DA" root tbf rate $((R * 8))bit burst 2000 limit 200000 || {
	t_skip "net distribution" "tc refuses a tbf qdisc"
	exit 0
}
PORT=$((20000 + $$ % 20000))

# The reference, each stage's latencies counted exactly in a map of its own, stamped with
# bpftrace's nsecs (bpf_ktime_get_ns):
# - send: a netudp thread's sendto entry to its net_dev_queue on DA, before the syscall returns;
# - qdisc: net_dev_queue to the qdisc_dequeue that hands the skb (a bulk dequeue's list walked);
# - xmit: the later of the two to net_dev_xmit;
# - rx: netif_receive_skb on DB to the sk_data_ready of the same CPU's receive;
# - read: sk_data_ready to the socket's next sock_recv_length (UDP's queue is kept in order).
# It attaches after ksight: on each tracepoint its program runs right after ksight's, so its
# stamps are late at both ends alike (~0.1-0.5 us).
bt_all() {
	cat <<BT
tracepoint:syscalls:sys_enter_sendto /comm == "netudp"/ { @ss[tid] = nsecs; }
tracepoint:syscalls:sys_exit_sendto { delete(@ss[tid]); }
tracepoint:net:net_dev_queue /str(args->name) == "$DA"/ {
	\$t = nsecs;
	if (@ss[tid]) { @send[\$t - @ss[tid]] = count(); }
	@q[(uint64)args->skbaddr] = \$t; @x[(uint64)args->skbaddr] = \$t;
}
tracepoint:qdisc:qdisc_dequeue /args->packets > 0/ {
	\$t = nsecs;
	\$s = (struct sk_buff *)args->skbaddr;
	\$i = 0;
	unroll(16) {
		if (\$i < args->packets && \$s != 0) {
			if (@q[(uint64)\$s]) { @qdisc[\$t - @q[(uint64)\$s]] = count(); delete(@q[(uint64)\$s]); @x[(uint64)\$s] = \$t; }
			\$s = \$s->next;
			\$i++;
		}
	}
}
tracepoint:net:net_dev_xmit /@x[(uint64)args->skbaddr]/ {
	\$t = nsecs;
	@xmit[\$t - @x[(uint64)args->skbaddr]] = count(); delete(@x[(uint64)args->skbaddr]); delete(@q[(uint64)args->skbaddr]);
}
tracepoint:net:netif_receive_skb { if (str(args->name) == "$DB") { @rs[cpu] = nsecs; } else { delete(@rs[cpu]); } }
tracepoint:sock:sk_data_ready /@rs[cpu] && args->protocol == 17/ {
	\$t = nsecs;
	@rx[\$t - @rs[cpu]] = count(); delete(@rs[cpu]);
	@qt[(uint64)args->skaddr, @tl[(uint64)args->skaddr]] = \$t; @tl[(uint64)args->skaddr]++;
}
tracepoint:sock:sock_recv_length /args->ret >= 0 && (args->flags & 0x2002) == 0 && @hd[(uint64)args->sk] < @tl[(uint64)args->sk]/ {
	\$t = nsecs;
	\$k = (uint64)args->sk;
	@read[\$t - @qt[\$k, @hd[\$k]]] = count(); delete(@qt[\$k, @hd[\$k]]); @hd[\$k]++;
}
END { clear(@ss); clear(@q); clear(@x); clear(@rs); clear(@qt); clear(@tl); clear(@hd); }
BT
}
# a kernel without the sock tracepoints: the reference leaves out the stages net cannot show
bt_script() {
	if [ "$STAGES" = "send qdisc xmit" ]; then bt_all | sed '/sock:sk_data_ready/,/^}$/d; /sock:sock_recv_length/,/^}$/d'; else bt_all; fi
}

# One run traced by both; sets KS_<stage> and REF_<stage> ("count p50 p90 p99").
dist_run() {
	PORT=$((PORT + 2))
	k_start net --port $PORT -j -n 0 || return 1
	bt_start || { k_stop; return 1; }
	# emptied here, not by the child's redirection: a reused file still says "ready" until it runs
	: >"$T_TMP/recv.out"
	ip netns exec "$B" "$WORKLOADS/netudp" recv "${NET}2" $PORT $K -s 1500 >"$T_TMP/recv.out" &
	R_PID=$!
	t_wait_for "$T_TMP/recv.out" ready
	ip netns exec "$A" "$WORKLOADS/netudp" send "${NET}2" $PORT $K $S >/dev/null
	wait $R_PID
	t_interrupt $BT_PID
	k_stop
	for st in $STAGES; do
		eval "REF_$st=\$(map_pcts \"\$T_TMP/ref.out\" $st)"
		eval "KS_$st=\$(k_jq --arg st $st '[(.rows[] | select(.stage == \$st) | .time_ns | .count, .p50, .p90, .p99)] | if length == 4 then . else [0, 0, 0, 0] end | map(tostring) | join(\" \")')"
	done
}

# Tolerance: ksight's slot (it reports a percentile as its slot's middle, within 1/32 of the
# value, d_near allows 1/16; the ranks are the same, nearest rank), the bucket width, plus
# what the two tools' stamps differ by: their programs run one after the other at each end,
# in an order that is not the same on every tracepoint (ksight's tp_btf beside bpftrace's
# perf event), ~0.5 us each: 2 us at p50 and p90, 10 us at p99, the tail a microsecond stage
# gets from an interrupt between the two.  On the millisecond stages (qdisc, read) that is
# the slot alone: a value one slot off fails.  Pairing a packet with its neighbour's event,
# losing or doubling one, moves the count (a read paired with the next datagram in the queue
# leaves the last read unpaired).
check() {
	for st in $STAGES; do
		eval "set -- \$KS_$st \$REF_$st"
		[ "$1" = "$5" ] && [ "$5" -ge $((K * 9 / 10)) ] && d_near "$2" "$6" 0 2000 && d_near "$3" "$7" 0 2000 && d_near "$4" "$8" 0 10000 || return 1
	done
}

# a loaded machine can delay one program between the two tools' stamps: one more try
for i in 1 2; do
	dist_run || { t_fail "net distribution" "bpftrace or ksight did not run"; continue; }
	check && break
	for st in $STAGES; do eval "echo \"# attempt $i: $st: ksight \$KS_$st, bpftrace \$REF_$st\""; done
done
t_eq "the receiver got them all" "received $K $((K * S))" "$(tail -1 "$T_TMP/recv.out")"
for st in $STAGES; do
	eval "set -- \$KS_$st \$REF_$st"
	echo "# $st: ksight count $1 p50 $2 p90 $3 p99 $4; bpftrace count $5 p50 $6 p90 $7 p99 $8 (attempt $i)"
	# every datagram passes each stage once (the tbf holds every one: none skips the qdisc); on a
	# loaded shared machine both tools have missed the same 6-13 of 200 past the send stage, the
	# receiver getting all 200: per-skb traces show no event of any probe for them (dequeue,
	# start_xmit, netif_rx, xmit, receive) for 6-9 ms on the CPU that sent them, with no recursion
	# miss for ksight; more often while another process opens and closes perf events: the
	# comparison needs most of them, the same ones
	[ "${5:-0}" -ge $((K * 9 / 10)) ] && t_pass "$st: the reference saw $5 of the $K datagrams" ||
		t_fail "$st: the reference saw at least 90% of the $K datagrams" "$5"
	t_eq "$st: ksight's count is the reference's" "$5" "$1"
	d_near "$2" "$6" 0 2000 && t_pass "$st: p50 $2 within a slot + 2 us of reference $6" ||
		t_fail "$st: p50 within a slot + 2 us of reference" "$2 vs $6"
	d_near "$3" "$7" 0 2000 && t_pass "$st: p90 $3 within a slot + 2 us of reference $7" ||
		t_fail "$st: p90 within a slot + 2 us of reference" "$3 vs $7"
	d_near "$4" "$8" 0 10000 && t_pass "$st: p99 $4 within a slot + 10 us of reference $8" ||
		t_fail "$st: p99 within a slot + 10 us of reference" "$4 vs $8"
done
t_eq "nothing lost" "0" "$(k_jq .lost)"

sleep 0.5
t_eq "no leaked programs" "" "$(t_unheld_progs "$START_ID" '^net_' | tr '\n' ' ')"
[ "$T_FAILED" = 0 ]
