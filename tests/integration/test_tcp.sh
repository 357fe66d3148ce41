# Integration: `ksight tcp` between two network namespaces with induced loss: retransmits as RetransSegs counts them, drops as nftables counts them, connect latency.
. tests/lib.sh
need_root tcp

BYTES=4000000
PORT=5201

tfs=$(awk '$3=="tracefs" {print $2; exit}' /proc/mounts)
for tp in tcp/tcp_retransmit_skb sock/inet_sock_set_state skb/kfree_skb; do
	if [ -n "$tfs" ] && [ ! -d "$tfs/events/$tp" ]; then
		t_skip tcp "this kernel has no ${tp%%/*}:${tp#*/} tracepoint"
		exit 0
	fi
done
if ! ip netns list >/dev/null 2>&1; then
	t_skip tcp "no 'ip netns' (iproute2) to make network namespaces"
	exit 0
fi
if ! command -v nft >/dev/null 2>&1; then
	t_skip tcp "no nft (nftables) to induce packet loss"
	exit 0
fi

# Two namespaces joined by a veth pair: A sends, B receives and drops 5% of the data it gets:
# every 20th data packet, not a random 5%.  veth can hand over GRO'd packets of up to 64 KiB,
# so a 4 MB transfer may be a few tens of packets, of which a random 5% can be none (a full
# suite run failed "ipv6: the loss caused retransmits: RetransSegs delta 0").
A=ksight-tcp-a-$$
B=ksight-tcp-b-$$
NET=10.199.$(($$ % 250)).
T_CLEANUP='ip netns del "$A" 2>/dev/null; ip netns del "$B" 2>/dev/null'
if ! { ip netns add "$A" && ip netns add "$B" &&
	ip link add ksa$$ type veth peer name ksb$$ &&
	ip link set ksa$$ netns "$A" && ip link set ksb$$ netns "$B" &&
	ip -n "$A" addr add "${NET}1/24" dev ksa$$ && ip -n "$B" addr add "${NET}2/24" dev ksb$$ &&
	ip -n "$A" addr add fd00:199::1/64 dev ksa$$ nodad && ip -n "$B" addr add fd00:199::2/64 dev ksb$$ nodad &&
	ip -n "$A" link set ksa$$ up && ip -n "$B" link set ksb$$ up &&
	ip -n "$A" link set lo up && ip -n "$B" link set lo up; }; then
	t_skip tcp "cannot make the network namespaces and veth pair"
	exit 0
fi
# data segments only (longer than any bare ACK or handshake packet), so every
# drop falls on an established connection and the handshake is never slowed
if ! ip netns exec "$B" nft -f - <<EOF
table inet ksight_loss {
	chain input {
		type filter hook input priority 0; policy accept;
		tcp dport $PORT meta length > 200 numgen inc mod 20 == 0 counter drop
	}
}
EOF
then
	t_skip tcp "nftables refuses the numgen drop rule"
	exit 0
fi

# RetransSegs of /proc/net/snmp inside the sender's namespace
retrans_segs() {
	ip netns exec "$A" cat /proc/net/snmp | awk '$1 == "Tcp:" { if (!n) { for (i = 1; i <= NF; i++) if ($i == "RetransSegs") c = i; n = 1 } else print $c }'
}

# packets the drop rule has dropped so far
nft_drops() {
	ip netns exec "$B" nft list table inet ksight_loss | awk '/counter packets/ { for (i = 1; i <= NF; i++) if ($i == "packets") print $(i + 1) }'
}

# Waits until no TCP socket in namespaces NS... can send any more: each one closed, or in
# TIME-WAIT or FIN-WAIT-2 (its data and FIN acknowledged); listeners send nothing themselves.
# The RetransSegs snapshots and ksight's report are taken at different moments: a socket that
# resends in between (a FIN or data timed out again after the programs exited, most likely
# under emulation, where a stalled guest overruns the RTO) counts in one and not the other.
tcp_settle() {
	_i=0
	for _ns in "$@"; do
		while [ -n "$(ip netns exec "$_ns" ss -Htan exclude time-wait exclude fin-wait-2 exclude listening)" ]; do
			_i=$((_i + 1))
			[ $_i -gt $((T_WAIT * 20)) ] && return 1
			sleep 0.05
		done
	done
}

# Starts tcpload in namespace NS with ARGS, gated on SIGUSR1; sets P_PID.
P_SEQ=0
p_start() {
	_ns=$1
	shift
	P_SEQ=$((P_SEQ + 1))
	P_OUT=$T_TMP/p.$P_SEQ
	ip netns exec "$_ns" "$WORKLOADS/tcpload" -g "$@" >"$P_OUT" &
	t_wait_for "$P_OUT" "[0-9]"
	P_PID=$(head -1 "$P_OUT")
}

# One bounded transfer to DST with `ksight tcp ARGS` tracing ("-p SENDER" stands for
# the sender's pid, known only once it runs); the RetransSegs delta in R_DELTA.
# CLIENT_EXTRA: more options for the sending tcpload.
CLIENT_EXTRA=
transfer() {
	_dst=$1
	_sender=no
	shift
	if [ "$1" = "-p" ] && [ "$2" = SENDER ]; then
		_sender=yes
		shift 2
	fi
	tcp_settle "$A" "$B" || t_fail "transfer: earlier sockets settle" "$(ip netns exec "$A" ss -Htan; ip netns exec "$B" ss -Htan)"
	p_start "$B" -s "$_dst" $PORT
	S_PID=$P_PID
	S_OUT=$P_OUT
	kill -USR1 "$S_PID"
	t_wait_for "$S_OUT" listening
	p_start "$A" -c "$_dst" $PORT -n $BYTES $CLIENT_EXTRA
	C_PID=$P_PID
	if [ $_sender = yes ]; then k_start tcp -p "$C_PID" "$@"; else k_start tcp "$@"; fi
	r0=$(retrans_segs)
	kill -USR1 "$C_PID"
	# the client ends when the server has read everything and closed: no segment of it is left to resend
	while kill -0 "$C_PID" 2>/dev/null; do sleep 0.05; done
	t_wait_for "$S_OUT" "received $BYTES" || t_fail "transfer" "the server did not get $BYTES bytes: $(cat "$S_OUT")"
	tcp_settle "$A" "$B" || t_fail "transfer: sockets settle" "$(ip netns exec "$A" ss -Htan; ip netns exec "$B" ss -Htan)"
	R_DELTA=$(($(retrans_segs) - r0))
	k_stop
}

# sum of VALUE over the rows whose local and remote addresses are the test's
flow_sum() {
	k_jq --arg a "$1" --arg b "$2" '[.rows[] | select((.local | startswith($a)) and (.remote | startswith($b))) | .'"$3"'] | add // 0'
}

# the first row has RTT samples
rtt_sampled() { k_jq '.rows[0].rtt_ns | (.count > 0 and .p50 > 0)'; }

# RTT at tcp_rcv_established where the kernel has BPF trampolines, else from tcp:tcp_probe
best=tp_btf
[ "$(k_feature fentry)" = OK ] && best=fentry
for fam in ipv4 ipv6; do
	if [ $fam = ipv4 ]; then src=${NET}1; dst=${NET}2; ls=$src:; rs=$dst:$PORT; else src=fd00:199::1; dst=fd00:199::2; ls="[$src]:"; rs="[$dst]:$PORT"; fi
	# -p on the sender: only its socket, wherever the kernel handles it
	transfer "$dst" -p SENDER --by flow -j
	t_eq "$fam: hook used, the best this kernel has" "$best" "$(k_jq .hook)"
	[ "$R_DELTA" -gt 0 ] && t_pass "$fam: the loss caused retransmits" || t_fail "$fam: the loss caused retransmits" "RetransSegs delta $R_DELTA"
	t_eq "$fam: retransmitted segments equal the RetransSegs delta" "$R_DELTA" "$(flow_sum "$ls" "$rs" retrans_segs)"
	t_eq "$fam: failed retransmits counted apart" "true" "$(k_jq '.rows[0].retrans_failed >= 0')"
	t_eq "$fam: one flow, the sender's" "1" "$(k_jq '.rows | length')"
	t_eq "$fam: family" "$fam" "$(k_jq '.rows[0].family')"
	t_eq "$fam: one connect, timed" "1 1" "$(k_jq '.rows[0] | "\(.connects) \(.connect_ns.count)"')"
	t_eq "$fam: connect latency sane" "true" "$(k_jq '.rows[0].connect_ns | (.p50 > 0 and .max < 1000000000)')"
	t_eq "$fam: RTT sampled" "true" "$(rtt_sampled)"
	t_eq "$fam: nothing lost" "0" "$(k_jq .lost)"
	# always present: a hash map lock that gave up is a loss with its own name (issue 11)
	t_eq "$fam: map_update_failed reported" "0" "$(k_jq .lost_by.map_update_failed)"
done

# One IPv4 transfer with only hook variant $1 allowed: the exact counts it must give too.
variant_run() {
	export KSIGHT_HOOK=$1
	transfer "${NET}2" -p SENDER --by flow -j
	unset KSIGHT_HOOK
	t_eq "$1: hook used" "$1" "$(k_jq .hook)"
	t_eq "$1: retransmitted segments equal the RetransSegs delta" "$R_DELTA" "$(flow_sum "${NET}1:" "${NET}2:$PORT" retrans_segs)"
	t_eq "$1: one connect, timed" "1 1" "$(k_jq '.rows[0] | "\(.connects) \(.connect_ns.count)"')"
}
# the classic tracepoints, as kernels without BTF run them
variant_run tp
# RTT is charged to the socket's owner: only a tcp_probe record with the socket address has it (6.1's has none)
if grep -q 'skaddr;' "$tfs/events/tcp/tcp_probe/format" 2>/dev/null; then
	t_eq "tp: RTT sampled" "true" "$(rtt_sampled)"
else
	t_eq "tp: no RTT without the socket in tcp_probe's record" "0" "$(k_jq '.rows[0].rtt_ns.count // 0')"
	t_eq "tp: a warning says why there is no RTT" "1" "$(grep -c 'tcp_probe records no socket address' "$K_ERR")"
fi

# the kprobe variant: RTT at tcp_rcv_established through a kprobe, the rest on classic tracepoints
if [ "$(k_feature kprobe)" = OK ]; then
	variant_run kprobe
	t_eq "kprobe: RTT sampled" "true" "$(rtt_sampled)"
else
	t_skip "kprobe" "doctor finds no kprobes on $(uname -r)"
fi

# --by pid: the sender's retransmits are its own, whichever context sent them
transfer "${NET}2" -p SENDER --by pid -j
t_eq "by pid: the sender's row" "$C_PID tcpload" "$(k_jq '.rows[0] | "\(.pid) \(.comm)"')"
t_eq "by pid: its retransmitted segments" "$R_DELTA" "$(k_jq '.rows[0].retrans_segs')"

# --by pid across an exec: the sender connects as tcpload, then execs tcpsend (a link to
# tcpload) on the socket it opened, and sends 200 MB.  Reports every 0.05 s, the last ones after
# it exited, when /proc no longer names it: every row of its pid says tcpsend, though its
# socket was opened by tcpload.  A row made in softirq after an interval's flip used to write
# the socket's name over the one the exec program had kept (tcpload in the last report).
ln -sf "$(realpath "$WORKLOADS/tcpload")" "$T_TMP/tcpsend"
xb=200000000
[ "${KSIGHT_ACCEL:-}" = tcg ] && xb=8000000 # an emulated CPU: as many intervals in less data
CLIENT_EXTRA="-x $T_TMP/tcpsend" BYTES=$xb
transfer "${NET}2" --by pid -i 0.05 -j
CLIENT_EXTRA= BYTES=4000000
t_eq "by pid, exec after connect: the sender's rows are named after the exec" "tcpsend" \
	"$(jq -rs --arg p "$C_PID" '[.[].rows[]? | select((.pid | tostring) == $p) | .comm] | unique | join(",")' "$K_OUT")"
nint=$(jq -s --arg p "$C_PID" '[.[] | select([.rows[]? | select((.pid | tostring) == $p)] | length > 0)] | length' "$K_OUT")
if [ "$nint" -ge 2 ]; then
	t_pass "by pid, exec after connect: rows of the sender in $nint intervals (rows made after a flip)"
else
	t_skip "by pid, exec after connect: rows made after a flip" "the transfer fit in $nint interval(s)"
fi
t_eq "by pid, exec after connect: its retransmitted segments, over the intervals" "$R_DELTA" \
	"$(jq -s --arg p "$C_PID" '[.[].rows[]? | select((.pid | tostring) == $p) | .retrans_segs] | add // 0' "$K_OUT")"

# --by reason on the receiver: every packet the rule dropped, by its reason;
# the server's socket is charged to its listener's owner
d0=$(nft_drops)
p_start "$B" -s "${NET}2" $PORT
S_PID=$P_PID
S_OUT=$P_OUT
k_start tcp -p "$S_PID" --by reason -j
kill -USR1 "$S_PID"
t_wait_for "$S_OUT" listening
ip netns exec "$A" "$WORKLOADS/tcpload" -c "${NET}2" $PORT -n $BYTES
t_wait_for "$S_OUT" "received" || t_fail "transfer" "the server got nothing"
k_stop
drops=$(($(nft_drops) - d0))
[ "$drops" -gt 0 ] && t_pass "by reason: the rule dropped packets" || t_fail "by reason: the rule dropped packets" "$drops"
t_eq "by reason: NETFILTER_DROP equals the nftables counter" "$drops" "$(k_jq '(.rows[] | select(.reason == "NETFILTER_DROP") | .drops) // 0')"

# --by flow without a filter (no owner looked up): the flow's exact counts all the same
transfer "${NET}2" --by flow -j
t_eq "unfiltered flow: retransmitted segments equal the RetransSegs delta" "$R_DELTA" "$(flow_sum "${NET}1:" "${NET}2:$PORT" retrans_segs)"
t_eq "unfiltered flow: one connect, timed" "1 1" "$(k_jq --arg a "${NET}1:" --arg b "${NET}2:$PORT" \
	'[.rows[] | select((.local | startswith($a)) and (.remote | startswith($b)))] | "\(map(.connects) | add) \(map(.connect_ns.count // 0) | add)"')"

# --by port: the service's port, from both ends
transfer "${NET}2" --by port -j
t_eq "by port: the service port has the sender's connect" "true" "$(k_jq '[.rows[] | select(.port == '$PORT') | .connects] | add >= 1')"

# RetransSegs of /proc/net/snmp inside namespace $1
retrans_segs_in() {
	ip netns exec "$1" cat /proc/net/snmp | awk '$1 == "Tcp:" { if (!n) { for (i = 1; i <= NF; i++) if ($i == "RetransSegs") c = i; n = 1 } else print $c }'
}

# iperf3 (a third-party sender) through the drop rule, with veth's TSO/GSO on:
# retransmits of many-segment skbs, fast retransmits, RTOs and tail-loss
# probes; several runs per hook variant, each exact against both ends'
# RetransSegs (the server retransmits too, and its socket is dual-stack:
# IPv4-mapped addresses).  6.18 under this loss retransmits whole TSO skbs
# now and then without firing tcp_retransmit_skb: counted all the same,
# from the socket's own count.
# runs per variant: three with the best hook, one with each fallback; in the
# kernel matrix's guest (KSIGHT_KERNEL set), whose emulation gives one test
# 300 s, one with the best and one with the kprobe variant (6.1's own hooks)
IPERF_RUNS=${IPERF_RUNS:-3}
LOSS_HOOKS="best raw_tp tp $([ "$(k_feature kprobe)" = OK ] && echo kprobe)"
if [ -n "${KSIGHT_KERNEL:-}" ]; then
	IPERF_RUNS=1
	LOSS_HOOKS="best $([ "$(k_feature kprobe)" = OK ] && echo kprobe)"
fi
iperf_run() {
	_h=$1
	# an earlier run's socket that still sends would count in ksight's report and not in the snapshot
	tcp_settle "$A" "$B" || t_fail "$_h: earlier sockets settle" "$(ip netns exec "$A" ss -Htan; ip netns exec "$B" ss -Htan)"
	ip netns exec "$B" iperf3 -s -1 --forceflush -p $PORT >"$T_TMP/iperf.s" 2>&1 &
	_s=$!
	t_wait_for "$T_TMP/iperf.s" "listening" || { t_fail "$_h: iperf3 server" "$(cat "$T_TMP/iperf.s")"; return 1; }
	if [ "$_h" = best ]; then k_start tcp --by flow -j -n 0; else KSIGHT_HOOK=$_h k_start tcp --by flow -j -n 0; fi
	_a0=$(retrans_segs_in "$A")
	_b0=$(retrans_segs_in "$B")
	ip netns exec "$A" iperf3 -c "${NET}2" -p $PORT -t 1 -Z >/dev/null 2>&1 || t_fail "$_h: iperf3 client" "exit $?"
	wait "$_s"
	tcp_settle "$A" "$B" || t_fail "$_h: the run's sockets settle" "$(ip netns exec "$A" ss -Htan; ip netns exec "$B" ss -Htan)"
	_a=$(($(retrans_segs_in "$A") - _a0))
	_b=$(($(retrans_segs_in "$B") - _b0))
	k_stop
}
if command -v iperf3 >/dev/null 2>&1; then
	for h in $LOSS_HOOKS; do
		multi=0
		runs=1
		[ "$h" = best ] && runs=$IPERF_RUNS
		for i in $(seq "$runs"); do
			iperf_run "$h" || continue
			t_eq "iperf3 $h run $i: the client's retransmitted segments equal its RetransSegs delta" "$_a" "$(flow_sum "${NET}1:" "${NET}2:$PORT" retrans_segs)"
			t_eq "iperf3 $h run $i: the server's (IPv4-mapped) equal its RetransSegs delta" "$_b" "$(flow_sum "${NET}2:$PORT" "${NET}1:" retrans_segs)"
			t_eq "iperf3 $h run $i: no row for retransmits beyond the test's flows" "0" \
				"$(k_jq '[.rows[] | select(.local == "other") | .retrans_segs] | add // 0')"
			[ "$(flow_sum "${NET}1:" "${NET}2:$PORT" retrans_segs)" -gt "$(flow_sum "${NET}1:" "${NET}2:$PORT" retransmits)" ] && multi=1
		done
		t_eq "iperf3 $h: some retransmits carried several segments (TSO/GSO)" 1 "$multi"
	done
	t_eq "iperf3: IPv4-mapped addresses shown as IPv4" "0" "$(grep -c 'ffff' "$K_OUT")"
	t_eq "iperf3: the server's dual-stack flow is ipv4" "ipv4" \
		"$(k_jq -r --arg a "${NET}2:$PORT" '[.rows[] | select(.local == $a) | .family][0]')"
else
	t_skip "iperf3" "iperf3 is not installed (scripts/setup.sh installs it)"
fi

# SYNs the handshake-loss rule dropped so far
syn_drops() {
	ip netns exec "$B" nft list table inet ksight_syn | awk '/counter packets/ { for (i = 1; i <= NF; i++) if ($i == "packets") print $(i + 1) }'
}

# Handshake loss: every other SYN dropped at the server, every other SYN-ACK at the
# client, so the client resends its SYN (tcp_retransmit_skb) and the server its
# SYN-ACK (tcp_rtx_synack: RetransSegs counts it, tcp_retransmit_skb never fires).
# The rules are made afresh for each run: numgen counts across runs, and a run that
# sent an odd number of SYNs (a lost SYN-ACK makes the client resend one too) would
# let the next run's first SYN through.
syn_loss_rules() {
	ip netns exec "$B" nft delete table inet ksight_syn 2>/dev/null
	ip netns exec "$A" nft delete table inet ksight_synack 2>/dev/null
	ip netns exec "$B" nft -f - <<EOF2
table inet ksight_syn {
	chain input {
		type filter hook input priority 0; policy accept;
		tcp flags & (syn | ack) == syn numgen inc mod 2 == 0 counter drop
	}
}
EOF2
	ip netns exec "$A" nft -f - <<EOF2
table inet ksight_synack {
	chain input {
		type filter hook input priority 0; policy accept;
		tcp flags & (syn | ack) == syn | ack numgen inc mod 2 == 0 counter drop
	}
}
EOF2
}
for h in $LOSS_HOOKS; do
	syn_loss_rules
	a0=$(retrans_segs_in "$A")
	b0=$(retrans_segs_in "$B")
	s0=$(syn_drops)
	p_start "$B" -s "${NET}2" $PORT
	S_PID=$P_PID
	S_OUT=$P_OUT
	kill -USR1 "$S_PID"
	t_wait_for "$S_OUT" listening
	if [ $h = best ]; then k_start tcp --by flow -j -n 0; else KSIGHT_HOOK=$h k_start tcp --by flow -j -n 0; fi
	ip netns exec "$A" "$WORKLOADS/tcpload" -c "${NET}2" $PORT -n 1000 >/dev/null
	t_wait_for "$S_OUT" "received" || t_fail "handshake loss" "the server got nothing"
	tcp_settle "$A" "$B" || t_fail "SYN loss $h: sockets settle" "$(ip netns exec "$A" ss -Htan; ip netns exec "$B" ss -Htan)"
	a=$(($(retrans_segs_in "$A") - a0))
	b=$(($(retrans_segs_in "$B") - b0))
	k_stop
	[ "$b" -gt 0 ] && t_pass "SYN loss $h: the server resent its SYN-ACK" || t_fail "SYN loss $h: the server resent its SYN-ACK" "RetransSegs delta $b"
	t_eq "SYN loss $h: the client's retransmitted segments (SYN) equal its RetransSegs delta" "$a" "$(flow_sum "${NET}1:" "${NET}2:$PORT" retrans_segs)"
	t_eq "SYN loss $h: the server's (SYN-ACK) equal its RetransSegs delta" "$b" "$(flow_sum "${NET}2:$PORT" "${NET}1:" retrans_segs)"
	# a first SYN has no socket at the input hook (early demux finds the
	# established hash's sockets, request socks among them, only for a resent
	# one): its drop has a row of its own, not "other"
	sd=$(($(syn_drops) - s0))
	t_eq "SYN loss $h: dropped SYNs ($sd) in the unattributed row or the flow's" "true" \
		"$(k_jq --argjson d "$sd" --arg b "${NET}2:" '$d > 0 and ([.rows[] | select(.local == "unattributed" or (.local | startswith($b))) | .drops] | add // 0) >= $d')"
	t_eq "SYN loss $h: nothing in other" "0" "$(k_jq '[.rows[] | select(.local == "other") | .drops + .retrans_segs] | add // 0')"
done
ip netns exec "$A" nft delete table inet ksight_synack
ip netns exec "$B" nft delete table inet ksight_syn

# Text: addresses printed whole with their ports, RTT columns named so
transfer "${NET}2" -p SENDER --by flow
t_eq "text: the flow's addresses whole" "1" "$(grep -c "^${NET}1:[0-9]* *${NET}2:$PORT " "$K_OUT")"
t_eq "text: RTT columns say RTT" "1" "$(grep -c ' rtt_p50 *rtt_p90 *rtt_p99 *rtt_max' "$K_OUT")"

# Memory budget: every mode's maps at 128 possible CPUs within 64 MiB, the default
# mode's allocated at load within 16 MiB; a budget too small is refused before load
MIB=1048576
for by in flow pid comm port reason; do
	KSIGHT_BUDGET_CPUS=128 "$KSIGHT" tcp --by $by -j -d 0.5 >"$T_TMP/budget.$by" 2>/dev/null
	t_eq "budget --by $by: maps at 128 CPUs within 64 MiB" "true" \
		"$(jq --argjson m $MIB '.maps.possible_cpus == 128 and .maps.total <= 64 * $m' "$T_TMP/budget.$by")"
done
t_eq "budget: default mode allocates at most 16 MiB at load" "true" \
	"$(jq --argjson m $MIB '.maps.allocated <= 16 * $m' "$T_TMP/budget.flow")"
"$KSIGHT" tcp --max-memory 1M -d 0.5 >/dev/null 2>"$T_TMP/budget.err"
t_eq "budget 1M: refused" "1" "$?"
t_eq "budget 1M: one line naming the budget" "1 1" \
	"$(wc -l <"$T_TMP/budget.err") $(grep -c 'over the memory budget of 1.0 MiB' "$T_TMP/budget.err")"
t_no_leaks tcp_

# bad input: exit 2 with one line, nothing loaded
"$KSIGHT" tcp --by disk >/dev/null 2>"$T_TMP/bad.err"
t_eq "bad --by: exit 2" "2" "$?"
t_eq "bad --by: one line" "1" "$(wc -l <"$T_TMP/bad.err")"
"$KSIGHT" tcp --max-rows 0 >/dev/null 2>&1
t_eq "bad --max-rows: exit 2" "2" "$?"

# leftovers: the namespaces go with the test, no program of ours survives its process
ip netns del "$A"
ip netns del "$B"
t_eq "namespaces removed" "" "$(ip netns list | grep -e "$A" -e "$B")"
t_no_leaks tcp_
t_no_leaks pid_comm_exec
