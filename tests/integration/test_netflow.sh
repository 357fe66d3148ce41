# Integration: `ksight netflow` at XDP and tcx on a veth pair between two namespaces: exact packets and bytes per flow against the sender and `ip -s link`; kill -9 and a bad device leave nothing attached.
. tests/lib.sh
need_root netflow

N=40 # datagrams per flow, of payloads 100..100+N-1 bytes
if ! ip netns list >/dev/null 2>&1 || ! command -v nft >/dev/null 2>&1; then
	t_skip netflow "no 'ip netns' or nft to make two quiet namespaces"
	exit 0
fi

# Two namespaces joined by veth: A sends, B counts.  The link carries nothing but the test's
# datagrams, so that `ip -s link`'s deltas are exact: static neighbours (no ARP, no neighbour
# solicitation), no DAD, no link-local address (no router solicitation), and nftables drops the
# MLD reports each namespace would send as it joins its solicited-node groups.
A=ksight-nf-a-$$
B=ksight-nf-b-$$
DA=nfa$$
DB=nfb$$
NET=10.198.$(($$ % 250)).
T_CLEANUP='ip netns del "$A" 2>/dev/null; ip netns del "$B" 2>/dev/null'
quiet() {
	ip netns exec "$1" nft -f - <<-EOF2
	table ip6 ksight_quiet {
		chain out {
			type filter hook output priority 0; policy accept;
			icmpv6 type { mld-listener-report, mld2-listener-report, nd-router-solicit, nd-neighbor-solicit } drop
		}
	}
	EOF2
}
if ! { ip netns add "$A" && ip netns add "$B" &&
	ip link add "$DA" type veth peer name "$DB" &&
	ip link set "$DA" netns "$A" && ip link set "$DB" netns "$B" && quiet "$A" && quiet "$B" &&
	ip -n "$A" link set "$DA" addrgenmode none && ip -n "$B" link set "$DB" addrgenmode none &&
	ip -n "$A" addr add "${NET}1/24" dev "$DA" && ip -n "$B" addr add "${NET}2/24" dev "$DB" &&
	ip -n "$A" addr add fd00:198::1/64 dev "$DA" nodad && ip -n "$B" addr add fd00:198::2/64 dev "$DB" nodad; }; then
	t_skip netflow "cannot make the network namespaces and veth pair"
	exit 0
fi
MA=$(ip -n "$A" -j link show "$DA" | jq -r '.[0].address')
MB=$(ip -n "$B" -j link show "$DB" | jq -r '.[0].address')
ip -n "$A" neigh replace "${NET}2" lladdr "$MB" dev "$DA" nud permanent
ip -n "$A" neigh replace fd00:198::2 lladdr "$MB" dev "$DA" nud permanent
ip -n "$B" neigh replace "${NET}1" lladdr "$MA" dev "$DB" nud permanent
ip -n "$B" neigh replace fd00:198::1 lladdr "$MA" dev "$DB" nud permanent
ip -n "$A" link set "$DA" up && ip -n "$B" link set "$DB" up

# B's receivers, so that no datagram draws an ICMP error back: one per family, bound ahead
RECV=$(cat <<'PY'
import socket, sys, time
s4 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s4.bind(("0.0.0.0", 9999))
s6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); s6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
s6.bind(("::", 9999))
print("ready", flush=True)
sys.stdin.read()
PY
)
# The sender: N datagrams of 100, 101, ... bytes (100 again after 1099) from port SPORT to B; prints what went out.
SEND=$(cat <<'PY'
import socket, sys
dst, sport, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = socket.socket(socket.AF_INET6 if ":" in dst else socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("", sport))
sent = octets = 0
for i in range(n):
    size = 100 + i % 1000  # below the MTU: no fragments
    if s.sendto(b"x" * size, (dst, 9999)) == size:
        sent += 1
        octets += size
print(sent, octets)
PY
)
mkfifo "$T_TMP/recv.in"
ip netns exec "$B" python3 -c "$RECV" <"$T_TMP/recv.in" >"$T_TMP/recv.out" &
exec 3>"$T_TMP/recv.in"
t_wait_for "$T_TMP/recv.out" ready || t_fail netflow "the receiver did not start"
T_CLEANUP="exec 3>&-; $T_CLEANUP"

# `ip -s link` counters of DEV in namespace NS: rx_packets rx_bytes tx_packets tx_bytes
link_stats() {
	ip -n "$1" -s -j link show "$2" | jq -r '.[0].stats64 | "\(.rx.packets) \(.rx.bytes) \(.tx.packets) \(.tx.bytes)"'
}

# What a run may leave on the device: XDP, tcx links, a qdisc other than the default noqueue
attached() {
	ip -n "$B" -d link show "$DB" | grep -o 'prog/xdp[^ ]*\|xdp[a-z]* id [0-9]*'
	# links of netflow programs, tcx or XDP (bpftool 7.1 knows tcx by number alone, and no device)
	{
		bpftool -j prog show 2>/dev/null || echo '[]'
		bpftool -j link show 2>/dev/null || echo '[]'
	} | jq -rs '(.[0] | map(select(.name // "" | test("^netflow")) | {(.id | tostring): true}) | add // {}) as $nf |
		.[1][] | select($nf[.prog_id | tostring]) | "link \(.id)"'
	ip netns exec "$B" tc qdisc show dev "$DB" | grep -v '^qdisc noqueue'
}

# netflow_run NAME ARGS...: ksight netflow ARGS in B, started and stopped around one v4 and one
# v6 flow of N datagrams each, with B's link counters before and after
netflow_run() {
	_n=$1
	shift
	t_name "$_n"
	_out=$T_NAME
	set -- $(link_stats "$B" "$DB")
	_before="$*"
	ip netns exec "$B" "$KSIGHT" netflow -j -n 0 $NF_ARGS >"$_out.json" 2>"$_out.err" &
	_pid=$!
	if ! t_wait_for "$_out.err" tracing; then
		t_fail "$_n" "ksight did not start: $(cat "$_out.err")"
		kill -9 "$_pid" 2>/dev/null
		return 1
	fi
	# the check of what kill -9 leaves sees what a run attaches
	t_ok "$_n: attached while running" test -n "$(attached)"
	S4=$(ip netns exec "$A" python3 -c "$SEND" "${NET}2" 4001 "$N")
	S6=$(ip netns exec "$A" python3 -c "$SEND" fd00:198::2 4002 "$N")
	t_interrupt "$_pid"
	set -- $(link_stats "$B" "$DB")
	_after="$*"
	DELTA=$(echo "$_before $_after" | awk '{ print $5 - $1, $6 - $2, $7 - $3, $8 - $4 }')
	OUT=$_out.json
}

# jq over the report: packets and bytes of the rows that match FILTER
rows_sum() {
	jq -r "[.rows[] | select($1)] | \"\([.[].packets] | add // 0) \([.[].bytes] | add // 0)\"" "$OUT"
}

# One pass per hook: the flow rows equal what the sender sent (bytes from the Ethernet header:
# 14 + 20 + 8 a datagram over IPv4, 14 + 40 + 8 over IPv6), and every row together equals the
# device's own counters in the direction counted.
check_hook() {
	_m=$1
	_dir=$2
	set -- $S4
	t_eq "$_m: sender sent $N IPv4 datagrams" "$N" "$1"
	want4="$1 $(($2 + $1 * 42))"
	set -- $S6
	t_eq "$_m: sender sent $N IPv6 datagrams" "$N" "$1"
	want6="$1 $(($2 + $1 * 62))"
	t_eq "$_m: IPv4 flow = sender" "$want4" \
		"$(rows_sum ".dir == \"$_dir\" and .proto == \"udp\" and .src == \"${NET}1:4001\" and .dst == \"${NET}2:9999\"")"
	t_eq "$_m: IPv6 flow = sender" "$want6" \
		"$(rows_sum ".dir == \"$_dir\" and .proto == \"udp\" and .src == \"[fd00:198::1]:4002\" and .dst == \"[fd00:198::2]:9999\"")"
	set -- $DELTA
	# veth with an XDP program counts received bytes without the Ethernet header (measured on
	# 6.18: 14 bytes a packet fewer than the same datagrams give it without XDP, the tc pass)
	[ "$_m" = xdp ] && set -- "$1" $(($2 + 14 * $1))
	t_eq "$_m: all $_dir rows = ip -s link RX delta" "$1 $2" "$(rows_sum ".dir == \"$_dir\"")"
	t_eq "$_m: nothing lost" "0 0" "$(jq -r '"\(.lost) \(.counters.to_other)"' "$OUT")"
}

PROG_MIN=$(t_prog_max_id)

NF_ARGS="--xdp $DB"
netflow_run xdp && check_hook xdp xdp

NF_ARGS="--tc $DB --both"
netflow_run tc && {
	check_hook tc ingress
	set -- $DELTA
	t_eq "tc: all egress rows = ip -s link TX delta" "$3 $4" "$(rows_sum '.dir == "egress"')"
}

# Reports every 10 ms while 4000 datagrams flow: each CPU's last flow, cached beside the rows,
# goes into its row at every drain; the flow's intervals add up to the sender's count
NF_ARGS="--xdp $DB -i 0.01"
N0=$N
N=4000
netflow_run interval && {
	t_eq "-i 0.01: the IPv4 flow's intervals add up to the sender's count" \
		"$(echo "$S4" | awk '{ print $1, $2 + $1 * 42 }')" \
		"$(jq -rs --arg s "${NET}1:4001" '[.[].rows[] | select(.src == $s)] | "\([.[].packets] | add // 0) \([.[].bytes] | add // 0)"' "$OUT")"
	t_in "-i 0.01: the flow spans several intervals" 2 100000 \
		"$(jq -s --arg s "${NET}1:4001" '[.[] | select(any(.rows[]; .src == $s))] | length' "$OUT")"
}
N=$N0

# --proto and --port: only the matching flow
NF_ARGS="--tc $DB --port 4002 --by proto"
netflow_run filter && t_eq "--port 4002 --by proto: the IPv6 flow alone" \
	"ingress ipv6 udp $(echo "$S6" | awk -v n="$N" '{ print $1, $2 + $1 * 62 }')" \
	"$(jq -r '[.rows[] | "\(.dir) \(.l3) \(.proto) \(.packets) \(.bytes)"] | join(",")' "$OUT")"

# kill -9 at random moments after attach, traffic flowing: nothing stays
ip netns exec "$A" python3 -c "$SEND" "${NET}2" 4003 1000000 >/dev/null 2>&1 &
FLOOD=$!
T_CLEANUP="kill $FLOOD 2>/dev/null; $T_CLEANUP"
for args in "--xdp $DB" "--tc $DB --both" "--xdp $DB" "--tc $DB --both"; do
	t_name kill
	ip netns exec "$B" "$KSIGHT" netflow $args >/dev/null 2>"$T_NAME.err" &
	_pid=$!
	if t_wait_for "$T_NAME.err" tracing; then
		sleep "0.$(awk -v s="$$$_pid" 'BEGIN { srand(s); printf "%03d", rand() * 300 }')"
		kill -9 "$_pid"
	else
		t_fail "kill -9 ($args)" "ksight did not start: $(cat "$T_NAME.err")"
		kill -9 "$_pid" 2>/dev/null
	fi
	wait "$_pid" 2>/dev/null
done
kill "$FLOOD" 2>/dev/null
wait "$FLOOD" 2>/dev/null
_i=0
while [ -n "$(attached)" ] && [ $_i -lt 30 ]; do
	sleep 0.1
	_i=$((_i + 1))
done
t_eq "kill -9: no XDP program, tcx link or qdisc left on the device" "" "$(attached | tr '\n' ' ')"
t_eq "kill -9: no netflow program left" "" "$(t_unheld_progs "$PROG_MIN" '^netflow' | tr '\n' ' ')"

# A device that is not there: one line, exit 2, nothing loaded
for args in "--xdp nosuch$$" "--tc nosuch$$"; do
	_max=$(t_prog_max_id)
	ip netns exec "$B" "$KSIGHT" netflow $args -d 1 >"$T_TMP/bad.out" 2>"$T_TMP/bad.err"
	t_eq "bad device ($args): exit 2" 2 $?
	t_eq "bad device ($args): one line" "1 ksight: error: netflow: no network device 'nosuch$$' in this namespace: No such device" \
		"$(wc -l <"$T_TMP/bad.err") $(cat "$T_TMP/bad.err")"
	t_eq "bad device ($args): no program loaded" "" \
		"$(bpftool -j prog show | jq -r --argjson m "$_max" '.[] | select(.id > $m and (.name // "" | test("^netflow"))) | .id')"
done

# Without CAP_NET_ADMIN: said by name, nothing attached
if command -v capsh >/dev/null 2>&1; then
	ip netns exec "$B" capsh --drop=cap_net_admin -- -c "exec $KSIGHT netflow --xdp $DB -d 1" >/dev/null 2>"$T_TMP/cap.err"
	_rc=$?
	t_in "no CAP_NET_ADMIN: fails" 1 255 "$_rc"
	t_eq "no CAP_NET_ADMIN: named" "1 ksight: error: netflow: attaching at XDP or tc needs CAP_NET_ADMIN, which this process lacks" \
		"$(wc -l <"$T_TMP/cap.err") $(cat "$T_TMP/cap.err")"
	t_eq "no CAP_NET_ADMIN: nothing attached" "" "$(attached | tr '\n' ' ')"
fi
exit $T_FAILED
