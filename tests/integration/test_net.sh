# Integration: `ksight net` between two network namespaces: exact per-flow packets and bytes at every stage (= `ip -s link`), a reader that sleeps 10 ms (its read stage within the reader's own bounds), a tbf qdisc's queueing against its rate and bpftrace, its bulk dequeues (lists of 9) counted packet by packet, drops by reason.
. tests/lib.sh
. tests/integration/dist_ref.sh
need_root net

tfs=$(awk '$3=="tracefs" {print $2; exit}' /proc/mounts)
for tp in qdisc/qdisc_dequeue net/net_dev_queue net/net_dev_xmit skb/kfree_skb; do
	if [ -n "$tfs" ] && [ ! -d "$tfs/events/$tp" ]; then
		t_skip net "this kernel has no ${tp%%/*}:${tp#*/} tracepoint"
		exit 0
	fi
done
# The stages a kernel before 6.10 (sock:sk_data_ready) or 6.4 (sock:sock_recv_length) cannot show:
# rx, and UDP's reads.  The ingress checks need both; egress, qdisc and drops run everywhere.
INGRESS=yes
for tp in sock/sk_data_ready sock/sock_recv_length; do
	[ -n "$tfs" ] && [ ! -d "$tfs/events/$tp" ] && INGRESS=no
done
if ! ip netns list >/dev/null 2>&1 || ! command -v tc >/dev/null 2>&1; then
	t_skip net "no 'ip netns' or tc (iproute2)"
	exit 0
fi

# Two namespaces joined by a veth pair, IPv4 only with static neighbours: no ARP, ND or MLD
# packet of their own, so the devices' counters move by the test's datagrams alone.
t_netns_pair net
A=$NS_A B=$NS_B DA=$NS_DA DB=$NS_DB NET=$NS_NET

# COUNTER (tx_packets, rx_bytes, ...) of device DEV in namespace NS
link_stat() {
	ip -n "$1" -s -j link show dev "$2" | jq -r --arg c "$3" '.[0].stats64 | if $c | startswith("tx") then .tx else .rx end | .[$c | sub("^[tr]x_"; "")]'
}

# sum of VALUE over the stage rows of the flow SRC -> DST
flow_val() {
	k_jq --arg s "$1" --arg d "$2" --arg st "$3" '[.rows[] | select(.src == $s and .dst == $d and .stage == $st) | .'"$4"'] | add // 0'
}

# The datagrams: N, the i-th of SIZE + (i % 4) * 100 bytes, each answered by a one-byte reply
# that the sender waits for; the receiver sleeps 10 ms after each one is queued, then reads it.
# exact_run HOOK N: with hook variant HOOK only (KSIGHT_HOOK), on port PORT.
SIZE=200
PORT=$((20000 + $$ % 20000))
exact_run() {
	h=$1 N=$2
	PORT=$((PORT + 2))
	KSIGHT_HOOK=$h k_start net --by flow --port $PORT -j
	tx0=$(link_stat "$A" "$DA" tx_packets) txb0=$(link_stat "$A" "$DA" tx_bytes)
	rx0=$(link_stat "$B" "$DB" rx_packets) rxb0=$(link_stat "$B" "$DB" rx_bytes)
	# emptied here, not by the child's redirection: a reused file still says "ready" until it runs
	: >"$T_TMP/recv.out"
	ip netns exec "$B" "$WORKLOADS/netudp" recv "${NET}2" $PORT $N -s 10000 -r >"$T_TMP/recv.out" &
	R_PID=$!
	t_wait_for "$T_TMP/recv.out" ready
	ip netns exec "$A" "$WORKLOADS/netudp" send "${NET}2" $PORT $N $SIZE 100 -w >"$T_TMP/send.out"
	wait $R_PID
	txd=$(($(link_stat "$A" "$DA" tx_packets) - tx0)) txbd=$(($(link_stat "$A" "$DA" tx_bytes) - txb0))
	rxd=$(($(link_stat "$B" "$DB" rx_packets) - rx0)) rxbd=$(($(link_stat "$B" "$DB" rx_bytes) - rxb0))
	k_stop
	read -r _ sent payload <"$T_TMP/send.out"
	t_eq "$h: hook used" "$h" "$(k_jq .hook)"
	t_eq "$h: sender sent them all" "$N" "$sent"
	t_eq "$h: receiver got them all" "received $N $payload" "$(tail -1 "$T_TMP/recv.out")"
	# on the wire: payload, UDP 8, IPv4 20, Ethernet 14
	wire=$((payload + N * 42))
	t_eq "$h: ip -s link: $DA sent exactly the datagrams" "$N $wire" "$txd $txbd"
	t_eq "$h: ip -s link: $DB received exactly the datagrams" "$N $wire" "$rxd $rxbd"
	src=${NET}1:$((PORT + 1))
	dst=${NET}2:$PORT
	for st in send xmit rx read; do
		case $INGRESS$st in noread | norx) continue ;; esac
		t_eq "$h: stage $st: packets and bytes of the flow = ip -s link's" "$txd $txbd" \
			"$(flow_val "$src" "$dst" $st packets) $(flow_val "$src" "$dst" $st bytes)"
	done
	t_eq "$h: no qdisc on veth (noqueue): no qdisc stage" "0" "$(flow_val "$src" "$dst" qdisc packets)"
	t_eq "$h: nothing lost" "0 0 0 0" "$(k_jq '.lost_by | "\(.lost) \(.stamps_full) \(.sends_full) \(.map_update_failed)"')"
	if [ $INGRESS = no ]; then
		t_skip "$h: rx and read stages" "no sock:sk_data_ready or sock:sock_recv_length on $(uname -r)"
		t_eq "$h: a warning says which" "1" "$(grep -c 'no sock:sk_data_ready\|no sock:sock_recv_length' "$K_ERR" | awk '{ print ($1 > 0) }')"
		return
	fi
	t_eq "$h: the replies: $N of 43 bytes, sent and read" "$N $((N * 43)) $N" \
		"$(flow_val "$dst" "$src" xmit packets) $(flow_val "$dst" "$src" xmit bytes) $(flow_val "$dst" "$src" read packets)"
	t_eq "$h: protocol" "udp" "$(k_jq --arg s "$src" '[.rows[] | select(.src == $s) | .proto] | unique | join(",")')"
	# the reader sleeps 10 ms once each datagram is queued; on a busy machine it sleeps longer, so the
	# read stage's total is checked against the receiver's own bounds on the same datagrams' waits
	# (netudp's do_recv): from poll's return to the read's start, and from the kernel's receive stamp
	# (wall clock: 0.1% for NTP's slew) to the read's return
	# shellcheck disable=SC2046
	set -- $(grep '^waits ' "$T_TMP/recv.out")
	lo=${2:-0} hi=${3:-0}
	sum=$(k_jq --arg s "$src" '.rows[] | select(.src == $s and .stage == "read") | .time_ns.sum')
	awk -v s="$sum" -v lo="$lo" -v hi="$hi" -v n="$N" 'BEGIN { exit !(lo >= n * 10000000 && s >= lo && s <= hi * 1.001) }' &&
		t_pass "$h: read stage: $sum ns in all, within the receiver's own $lo..$hi ns" ||
		t_fail "$h: read stage within the receiver's own bounds ($lo..$hi ns, at least the sleeps)" "$sum ns"
	p50=$(k_jq --arg s "$src" '.rows[] | select(.src == $s and .stage == "rx") | .time_ns.p50')
	[ "$p50" -lt 5000000 ] && t_pass "$h: rx stage: driver to socket well under the sleep ($p50 ns)" ||
		t_fail "$h: rx stage: driver to socket well under the sleep" "$p50 ns"
}
exact_run tp_btf 40
# the fallback: kernels without BTF for tp_btf's arguments run raw_tp, counting the same
exact_run raw_tp 8

# A tbf qdisc of rate R bytes/s and bucket BURST bytes on A's side, and a burst of K datagrams of
# W bytes on the wire sent at once: the i-th (from 0) waits (i+1)*W/R - BURST/R when positive.
K=40
S=1000
W=$((S + 42))
# slow enough (2 Mbit/s: 4.2 ms a packet) that a sender held off the CPU for a few ms on a busy
# machine barely changes the backlog (at 8 Mbit/s one suite run queued 594 ms for 775 ms)
R=250000
BURST=2000
ip -n "$A" link set "$DA" mtu 1500
if ! tc -n "$A" qdisc add dev "$DA" root tbf rate $((R * 8))bit burst $BURST limit 200000; then
	t_skip "tbf" "tc refuses a tbf qdisc"
else
	PORT=$((PORT + 2))
	# the bpftrace reference over the same packets: the qdisc stage the same way (stamps by skb)
	bt_script() {
		cat <<EOF
tracepoint:net:net_dev_queue /str(args->name) == "$DA"/ { @q[args->skbaddr] = nsecs; }
tracepoint:qdisc:qdisc_dequeue /@q[args->skbaddr]/ { @n = count(); @sum = sum(nsecs - @q[args->skbaddr]); delete(@q[args->skbaddr]); }
END { clear(@q); }
EOF
	}
	BT=no
	command -v bpftrace >/dev/null 2>&1 && bt_start && BT=yes
	k_start net --by flow --port $PORT -j
	# emptied here, not by the child's redirection: a reused file still says "ready" until it runs
	: >"$T_TMP/recv2.out"
	ip netns exec "$B" "$WORKLOADS/netudp" recv "${NET}2" $PORT $K >"$T_TMP/recv2.out" &
	R_PID=$!
	t_wait_for "$T_TMP/recv2.out" ready
	ip netns exec "$A" "$WORKLOADS/netudp" send "${NET}2" $PORT $K $S >/dev/null
	wait $R_PID
	k_stop
	[ $BT = yes ] && t_interrupt $BT_PID
	src=${NET}1:$((PORT + 1))
	dst=${NET}2:$PORT
	echo "# tbf: lost_by $(k_jq -c .lost_by)"
	t_eq "tbf: every datagram went through the qdisc" "$K $((K * W))" \
		"$(flow_val "$src" "$dst" qdisc packets) $(flow_val "$src" "$dst" qdisc bytes)"
	want=$(awk -v k=$K -v w=$W -v r=$R -v b=$BURST 'BEGIN { for (i = 0; i < k; i++) { t = ((i + 1) * w - b) / r; if (t > 0) s += t } printf "%.0f", s * 1e9 }')
	got=$(k_jq --arg s "$src" '.rows[] | select(.src == $s and .stage == "qdisc") | .time_ns.sum')
	if [ "${KSIGHT_ACCEL:-}" = tcg ]; then
		# under an emulated CPU neither side keeps time with the rate: the 6.1 guest measured 3.6 s
		# (dequeue timers late) and 0.056 s (a sender slower than the rate: no backlog) for 0.78 s
		t_skip "tbf: qdisc time against the rate" "an emulated CPU (TCG) keeps no time with the rate: $got ns for $want ns"
	else
		awk -v g="$got" -v w="$want" 'BEGIN { exit !(g >= 0.9 * w && g <= 1.1 * w) }' &&
			t_pass "tbf: qdisc time $got ns, within 10% of the rate's $want ns" ||
			t_fail "tbf: qdisc time within 10% of what the rate implies" "$got ns, expected $want ns"
	fi
	t_eq "tbf: the receiver got them all" "received $K $((K * S))" "$(tail -1 "$T_TMP/recv2.out")"
	if [ $BT = yes ]; then
		bt_n=$(awk '/^@n:/ { print $2 }' "$T_TMP/ref.out")
		bt_sum=$(awk '/^@sum:/ { print $2 }' "$T_TMP/ref.out")
		t_eq "tbf: bpftrace saw the same packets leave the qdisc" "$K" "$bt_n"
		# the two programs stamp the same events a few microseconds apart: 1% of 0.8 s covers it
		d_near "$got" "$bt_sum" 0.01 0 && t_pass "tbf: qdisc time $got ns, bpftrace's $bt_sum ns" ||
			t_fail "tbf: qdisc time as bpftrace measures it" "$got ns, bpftrace $bt_sum ns"
	else
		t_skip "tbf: bpftrace reference" "bpftrace missing or did not attach: $(head -3 "$T_TMP/ref.out" 2>/dev/null)"
	fi

	# Bulk dequeue, forced: a tbf of 800 bit/s lets the first of K - 1 datagrams through and holds
	# the rest (10 s a packet); once they are all queued the rate goes to 1 Gbit/s with a bucket of
	# 96 packets, and a last datagram runs the qdisc: each dequeue_skb() hands a list of 9 (veth
	# has 2 tx queues: try_bulk_dequeue_skb_slow), the tracepoint naming the first skb only.
	PORT=$((PORT + 2))
	tc -n "$A" qdisc replace dev "$DA" root tbf rate 800bit burst 1100 limit 200000
	# the bpftrace reference walks the list too (skb->next, as many as the tracepoint's packets)
	bt_script() {
		cat <<EOF
tracepoint:net:net_dev_queue /str(args->name) == "$DA"/ { @q[(uint64)args->skbaddr] = nsecs; }
tracepoint:qdisc:qdisc_dequeue /args->packets > 0/ {
	@max = max(args->packets);
	\$s = (struct sk_buff *)args->skbaddr;
	\$i = 0;
	unroll(16) {
		if (\$i < args->packets && \$s != 0) {
			if (@q[(uint64)\$s]) { @n = count(); delete(@q[(uint64)\$s]); }
			\$s = \$s->next;
			\$i++;
		}
	}
}
END { clear(@q); }
EOF
	}
	BT=no
	command -v bpftrace >/dev/null 2>&1 && bt_start && BT=yes
	k_start net --by flow --port $PORT -j
	# emptied here, not by the child's redirection: a reused file still says "ready" until it runs
	: >"$T_TMP/recv5.out"
	ip netns exec "$B" "$WORKLOADS/netudp" recv "${NET}2" $PORT $K >"$T_TMP/recv5.out" &
	R_PID=$!
	t_wait_for "$T_TMP/recv5.out" ready
	ip netns exec "$A" "$WORKLOADS/netudp" send "${NET}2" $PORT $((K - 1)) $S >/dev/null
	# until the qdisc holds K - 2 of them (tc -s: "backlog Nb Mp")
	i=0
	until [ "$(tc -n "$A" -s qdisc show dev "$DA" | sed -n 's/.*backlog [0-9]*b \([0-9]*\)p.*/\1/p')" = $((K - 2)) ]; do
		i=$((i + 1))
		[ $i -gt $((T_WAIT * 20)) ] && break
		sleep 0.05
	done
	tc -n "$A" qdisc change dev "$DA" root tbf rate 1gbit burst 100000 limit 200000
	ip netns exec "$A" "$WORKLOADS/netudp" send "${NET}2" $PORT 1 $S >/dev/null
	wait $R_PID
	k_stop
	[ $BT = yes ] && t_interrupt $BT_PID
	src=${NET}1:$((PORT + 1))
	dst=${NET}2:$PORT
	t_eq "tbf bulk: the receiver got them all" "received $K $((K * S))" "$(tail -1 "$T_TMP/recv5.out")"
	t_eq "tbf bulk: every datagram went through the qdisc, each of a list counted" "$K $((K * W))" \
		"$(flow_val "$src" "$dst" qdisc packets) $(flow_val "$src" "$dst" qdisc bytes)"
	t_eq "tbf bulk: nothing lost" "0 0" "$(k_jq '.lost_by | "\(.lost) \(.stamps_full)"')"
	if [ $BT = yes ]; then
		t_eq "tbf bulk: bpftrace saw lists of 9 and every packet in them" "9 $K" \
			"$(awk '/^@max:/ { m = $2 } /^@n:/ { n = $2 } END { print m, n }' "$T_TMP/ref.out")"
	else
		t_skip "tbf bulk: bpftrace reference" "bpftrace missing or did not attach: $(head -3 "$T_TMP/ref.out" 2>/dev/null)"
	fi

	# A packet net_dev_queue stamped that leaves by a path no tracepoint pairs: TCP's GSO skbs
	# (veth offloads segmentation: up to 64 KB) are longer than the tbf's bucket, so tbf_segment
	# splits each, frees it (consume_skb) and queues its segments, which no stamp names.  Such a
	# packet's qdisc and xmit stages miss it: counted as lost, not dropped silently (was lost 0).
	tc -n "$A" qdisc replace dev "$DA" root tbf rate 1gbit burst 20000 limit 1000000
	PORT=$((PORT + 2))
	k_start net --by flow --port $PORT -j
	: >"$T_TMP/tcp.out"
	ip netns exec "$B" "$WORKLOADS/tcpload" -s "${NET}2" $PORT >"$T_TMP/tcp.out" &
	S_PID=$!
	t_wait_for "$T_TMP/tcp.out" listening
	ip netns exec "$A" "$WORKLOADS/tcpload" -c "${NET}2" $PORT -n 300000 >/dev/null
	wait $S_PID
	k_stop
	segs=$(tc -n "$A" -s qdisc show dev "$DA" | awk '/Sent/ { print $4; exit }')
	t_eq "tbf segmenting GSO: the server got it all" "received 300000" "$(grep received "$T_TMP/tcp.out")"
	k_jq '.lost_by.lost > 0' | grep -qx true &&
		t_pass "tbf segmenting GSO: the skbs tbf split are reported lost ($(k_jq .lost_by.lost)), the qdisc sent $segs segments" ||
		t_fail "tbf segmenting GSO: the skbs tbf split are reported lost" "lost $(k_jq .lost_by.lost), qdisc sent $segs"
fi

# --by stage: softirq time per CPU, and the stages without flows
k_start net -j
# emptied here, not by the child's redirection: a reused file still says "ready" until it runs
: >"$T_TMP/recv3.out"
ip netns exec "$B" "$WORKLOADS/netudp" recv "${NET}2" $PORT 5 >"$T_TMP/recv3.out" &
R_PID=$!
t_wait_for "$T_TMP/recv3.out" ready
ip netns exec "$A" "$WORKLOADS/netudp" send "${NET}2" $PORT 5 100 >/dev/null
wait $R_PID
k_stop
t_eq "by stage: the hook, the best this kernel has" "tp_btf" "$(k_jq .hook)"
t_eq "by stage: NET_RX softirq time per CPU" "true" "$(k_jq '[.rows[] | select(.stage == "softirq_rx" and .cpu >= 0)] | length > 0')"
[ $INGRESS = yes ] && t_eq "by stage: read stage present" "true" "$(k_jq '[.rows[] | select(.stage == "read")] | length == 1')"

# --by stage with a task filter and no --port (no header read): netudp's 6 datagrams of 100 bytes
# and their 6 replies of 1, exact at send, xmit and read (bytes: + UDP, IPv4, Ethernet), in the
# per-CPU stage rows; the send stamps in task storage (bench/net.sh: what each saves)
# udp_run NET_OPTION...: net with those options while netudp sends 6 datagrams of 100 bytes to
# $PORT and gets 6 replies
udp_run() {
	k_start net "$@" -j
	# emptied here, not by the child's redirection: a reused file still says "ready" until it runs
	: >"$T_TMP/recv4.out"
	ip netns exec "$B" "$WORKLOADS/netudp" recv "${NET}2" $PORT 6 -r >"$T_TMP/recv4.out" &
	R_PID=$!
	t_wait_for "$T_TMP/recv4.out" ready
	ip netns exec "$A" "$WORKLOADS/netudp" send "${NET}2" $PORT 6 100 -w >/dev/null
	wait $R_PID
	k_stop
}
PORT=$((PORT + 2))
udp_run --comm netudp
want="send 12 1110,xmit 12 1110"
[ $INGRESS = yes ] && want="$want,read 12 1110"
t_eq "by stage --comm: netudp's packets and bytes at each stage, none in softirq's rx" "$want" \
	"$(k_jq '[.rows[] | select(.stage == "send" or .stage == "xmit" or .stage == "read" or .stage == "rx") |
		"\(.stage) \(.packets) \(.bytes)"] | join(",")')"
t_eq "by stage: stage rows per CPU, send stamps in task storage" "percpu_array task_storage" \
	"$(k_jq '[.maps.by_map[] | select(.name == "stage_rows" or .name == "sends") | .type] | join(" ")')"

# --by dev and --by comm with a task filter: the same datagrams by device, and by the task that
# sent or read them (rx runs in softirq, where no task owns the packet: not counted under --comm)
by_run() {
	PORT=$((PORT + 2))
	udp_run "$@" --port $PORT
}
by_run --by dev
t_eq "by dev: $DA sends the 6 datagrams, $DB the 6 replies" "6 6 6 12" \
	"$(k_jq --arg a "$DA" --arg b "$DB" '[([.rows[] | select(.dev == $a and .stage == "send") | .packets] | add),
		([.rows[] | select(.dev == $a and .stage == "xmit") | .packets] | add),
		([.rows[] | select(.dev == $b and .stage == "xmit") | .packets] | add),
		([.rows[] | select(.stage == "xmit") | .packets] | add)] | map(. // 0) | join(" ")')"
by_run --by comm --comm netudp
# UDP's reads need sock:sock_recv_length (6.4)
reads=12
[ $INGRESS = no ] && reads=0
t_eq "by comm --comm: sent and read by netudp, none in softirq" "12 $reads 0" \
	"$(k_jq '[([.rows[] | select(.comm == "netudp" and .stage == "send") | .packets] | add),
		([.rows[] | select(.comm == "netudp" and .stage == "read") | .packets] | add),
		([.rows[] | select(.stage == "rx") | .packets] | add)] | map(. // 0) | join(" ")')"

# Drops by reason: an nftables rule in B drops D datagrams of one port; its counter and the drop
# rows agree, by the kernel's reason.
D=12
if ! command -v nft >/dev/null 2>&1; then
	t_skip "drops" "no nft (nftables) to drop packets"
elif ! ip netns exec "$B" nft -f - <<EOF
table inet ksight_net {
	chain input {
		type filter hook input priority 0; policy accept;
		udp dport $((PORT + 2)) counter drop
	}
}
EOF
then
	t_skip "drops" "nftables refuses the drop rule"
else
	PORT=$((PORT + 2))
	k_start net --port $PORT -j
	ip netns exec "$A" "$WORKLOADS/netudp" send "${NET}2" $PORT $D 100 >/dev/null
	nft_n=$(ip netns exec "$B" nft list table inet ksight_net | awk '/counter packets/ { for (i = 1; i <= NF; i++) if ($i == "packets") print $(i + 1) }')
	k_stop
	t_eq "drops: nftables dropped them all" "$D" "$nft_n"
	t_eq "drops: one drop row, by the kernel's reason" "NETFILTER_DROP $D" \
		"$(k_jq '[.rows[] | select(.stage == "drop")] | map("\(.reason) \(.packets)") | join(",")')"
	t_eq "drops: none of them read" "0" "$(k_jq '[.rows[] | select(.stage == "read") | .packets] | add // 0')"
fi

# bad input: exit 2 with one line, nothing loaded
for bad in "--by disk" "--port 0" "--port 70000" "--proto icmp" "--dev a/b" "--dev 0123456789abcdefX" "--max-rows 0"; do
	# shellcheck disable=SC2086
	"$KSIGHT" net $bad -d 1 >/dev/null 2>"$T_TMP/bad.err"
	t_eq "bad input $bad: exit 2, one line" "2 1" "$? $(wc -l <"$T_TMP/bad.err")"
done

# leftovers: the namespaces go with the test, no program of ours survives its process
ip netns del "$A"
ip netns del "$B"
t_eq "namespaces removed" "" "$(ip netns list | grep -e "$A" -e "$B")"
t_no_leaks net_
[ "$T_FAILED" = 0 ]
