# Integration: `ksight tcp` listen-queue overflows and drops against /proc/net/netstat, and cwnd/ssthresh against `ss -ti`, in a network namespace of the test's own.
. tests/lib.sh
need_root tcp_listen

tfs=$(awk '$3=="tracefs" {print $2; exit}' /proc/mounts)
if [ -n "$tfs" ] && [ ! -d "$tfs/events/sock/sk_data_ready" ]; then
	t_skip tcp_listen "this kernel has no sock:sk_data_ready tracepoint (6.1 has none): no listen overflows"
	exit 0
fi
if ! command -v python3 >/dev/null 2>&1 || ! command -v nft >/dev/null 2>&1; then
	t_skip tcp_listen "needs python3 and nft"
	exit 0
fi

# /proc/net/netstat is per namespace: nothing but the test's own connections counts there.
# Its own address too: flow rows name addresses, not namespaces.
N=ksight-tl-$$
ADDR=10.198.$(($$ % 250)).1
ADDR6=fd00:198::1
PORT=5301
BULK=5302
T_CLEANUP='ip netns del "$N" 2>/dev/null'
if ! { ip netns add "$N" && ip -n "$N" link set lo up && ip -n "$N" addr add "$ADDR/32" dev lo &&
	ip -n "$N" addr add "$ADDR6/128" dev lo nodad; }; then
	t_skip tcp_listen "cannot make a network namespace"
	exit 0
fi

# TcpExt counter NAME in the namespace
netstat_of() {
	ip netns exec "$N" awk -v f="$1" '$1 == "TcpExt:" { if (!h) { for (i = 1; i <= NF; i++) if ($i == f) c = i; h = 1 } else print $c }' /proc/net/netstat
}

# A listener with a backlog of 1 that never accepts, and K connections to it: two children
# fill its accept queue (full: more than the backlog), every later SYN is refused.  The
# script waits until the kernel counted DROPS refusals, then closes everything: no SYN is
# retried after it ends.
cat >"$T_TMP/listen.py" <<'EOF'
import socket, sys, time
addr, port, k, drops = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
def listendrops():
    rows = [l.split() for l in open("/proc/net/netstat") if l.startswith("TcpExt:")]
    return int(rows[1][rows[0].index("ListenDrops")])
start = listendrops()
fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
l = socket.socket(fam)
l.bind((addr, port))
l.listen(1)
cs = []
for _ in range(k):
    c = socket.socket(fam)
    c.setblocking(False)
    try:
        c.connect((addr, port))
    except BlockingIOError:
        pass
    cs.append(c)
end = time.time() + 30
while listendrops() - start < drops and time.time() < end:
    time.sleep(0.02)
for c in cs:
    c.close()
l.close()
EOF

K=6
# listen_run FAMILY [HOOK]: K connections to a backlog-1 listener; its row against the netstat deltas
listen_run() {
	fam=$1
	tag=$fam${2:+ $2}
	if [ $fam = ipv4 ]; then a=$ADDR; la=$ADDR:$PORT; ra=0.0.0.0:0; else a=$ADDR6; la="[$ADDR6]:$PORT"; ra="[::]:0"; fi
	[ -n "${2:-}" ] && export KSIGHT_HOOK=$2
	k_start tcp --by flow -j || { t_fail "$tag listen: ksight starts" "$(cat "$K_ERR")"; exit 1; }
	unset KSIGHT_HOOK
	o0=$(netstat_of ListenOverflows)
	d0=$(netstat_of ListenDrops)
	ip netns exec "$N" python3 "$T_TMP/listen.py" "$a" $PORT $K $((K - 2))
	o1=$(netstat_of ListenOverflows)
	d1=$(netstat_of ListenDrops)
	k_stop
	lrow() { k_jq --arg l "$la" --arg r "$ra" '[.rows[] | select(.local == $l and .remote == $r) | .'"$1"'] | add // 0'; }
	t_in "$tag listen: the full queue refused SYNs" $((K - 2)) 1000 $((o1 - o0))
	t_eq "$tag listen: listen_overflows equal the ListenOverflows delta" $((o1 - o0)) "$(lrow listen_overflows)"
	t_eq "$tag listen: listen_drops equal the ListenDrops delta" $((d1 - d0)) "$(lrow listen_drops)"
	t_eq "$tag listen: one listener row" 1 "$(k_jq --arg l "$la" --arg r "$ra" '[.rows[] | select(.local == $l and .remote == $r)] | length')"
	t_eq "$tag listen: nothing lost" 0 "$(k_jq .lost)"
}
listen_run ipv4
listen_run ipv6
# the raw_tp and classic tracepoint programs, as kernels without tp_btf run them
listen_run ipv4 raw_tp
listen_run ipv4 tp
t_eq "tp listen: the classic tracepoints were used" tp "$(k_jq .hook)"

# --by port: the listener's port
k_start tcp --by port -j || { t_fail "listen by port: ksight starts" "$(cat "$K_ERR")"; exit 1; }
o0=$(netstat_of ListenOverflows)
ip netns exec "$N" python3 "$T_TMP/listen.py" "$ADDR" $PORT $K $((K - 2))
o1=$(netstat_of ListenOverflows)
k_stop
t_eq "listen by port: the listener's port has the overflows" $((o1 - o0)) \
	"$(k_jq --argjson p $PORT '[.rows[] | select(.port == $p) | .listen_overflows] | add // 0')"

# cwnd and ssthresh: a bulk flow over lo that loses every 25th data segment (so that the
# sender leaves slow start), held open once everything is acknowledged, read by `ss -ti`.
ip netns exec "$N" nft -f - <<EOF || { t_skip "cwnd" "nftables refuses the numgen drop rule"; exit 0; }
table inet ksight_tl {
	chain input {
		type filter hook input priority 0; policy accept;
		tcp dport $BULK meta length > 200 numgen inc mod 25 == 0 counter drop
	}
}
EOF
cat >"$T_TMP/bulk.py" <<'EOF'
import fcntl, os, socket, struct, sys, termios, threading, time
addr, port, n, done = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
l = socket.socket()
l.bind((addr, port))
l.listen(1)
def serve():
    s, _ = l.accept()
    while s.recv(1 << 16):
        pass
threading.Thread(target=serve, daemon=True).start()
c = socket.create_connection((addr, port))
buf = b"x" * (1 << 16)
sent = 0
while sent < n:
    sent += c.send(buf)
# waits until nothing is unacknowledged (TIOCOUTQ: bytes not yet acked)
def acked():
    end = time.time() + 30
    while struct.unpack("i", fcntl.ioctl(c, termios.TIOCOUTQ, b"\0\0\0\0"))[0] and time.time() < end:
        time.sleep(0.01)
acked()
# One byte more, once the window settled: tcp_probe records the window before its segment's
# ACK is processed, and the last ACK of the bulk may still change it (an undo of a spurious
# recovery restores the window from before it: 4 then, 22 in `ss` in one run).  The byte's
# ACK is recorded with the settled window; too little to grow it (the sender is not
# window-limited).  Then say so and hold.
c.send(b"y")
acked()
print(c.getsockname()[1], flush=True)
open(done, "w").write("acked\n")
while os.path.exists(done):
    time.sleep(0.02)
c.close()
EOF
k_start tcp --by flow -j || { t_fail "cwnd: ksight starts" "$(cat "$K_ERR")"; exit 1; }
: >"$T_TMP/bulk.out"
ip netns exec "$N" python3 "$T_TMP/bulk.py" "$ADDR" $BULK 20000000 "$T_TMP/bulk.done" >"$T_TMP/bulk.out" &
B_PID=$!
t_wait_for "$T_TMP/bulk.done" acked || t_fail "cwnd: the bulk flow ends" "$(cat "$T_TMP/bulk.out")"
SS=$(ip netns exec "$N" ss -tinH state established "( dport = :$BULK )")
rm -f "$T_TMP/bulk.done"
wait $B_PID
k_stop
CPORT=$(head -1 "$T_TMP/bulk.out")
ss_cwnd=$(echo "$SS" | tr ' ' '\n' | sed -n 's/^cwnd:\([0-9]*\)$/\1/p')
ss_ssth=$(echo "$SS" | tr ' ' '\n' | sed -n 's/^ssthresh:\([0-9]*\)$/\1/p')
crow() { k_jq --arg l "$ADDR:$CPORT" --arg r "$ADDR:$BULK" '.rows[] | select(.local == $l and .remote == $r) | .'"$1"; }
last=$(crow cwnd_last)
echo "ss: cwnd $ss_cwnd ssthresh $ss_ssth; ksight: cwnd min $(crow cwnd_min) max $(crow cwnd_max) last $last ssthresh $(crow ssthresh_last)"
# the record is taken before its ACK is processed: the last ACK may still move the window a little
tol=$((ss_cwnd / 10 + 2))
t_in "cwnd: the last cwnd is what ss -ti shows, within 10% + 2" $((ss_cwnd - tol)) $((ss_cwnd + tol)) "$last"
t_in "cwnd: min <= last <= max" "$(crow cwnd_min)" "$(crow cwnd_max)" "$last"
if [ -n "$ss_ssth" ]; then
	tol=$((ss_ssth / 10 + 2))
	t_in "cwnd: the last ssthresh is what ss -ti shows, within 10% + 2" $((ss_ssth - tol)) $((ss_ssth + tol)) "$(crow ssthresh_last)"
else
	t_fail "cwnd: the loss set a slow-start threshold" "ss -ti: $SS"
fi

# A gauge with no sample in an interval keeps its last value: a flow whose segments are
# acknowledged (tcp_probe sets its cwnd), then whose every packet to the peer is dropped,
# so that its next intervals see retransmits only, with no tcp_probe.  serve's totals keep
# the window of the last sample (before the fix: 0, written by the retransmits' interval).
GPORT=5303
cat >"$T_TMP/gauge.py" <<'EOF2'
import os, socket, sys, threading, time, fcntl, struct, termios
addr, port, st = sys.argv[1], int(sys.argv[2]), sys.argv[3]
l = socket.socket()
l.bind((addr, port))
l.listen(1)
# both ends reset at exit (linger 0): no orphan retransmits its FIN past the test
lin = struct.pack("ii", 1, 0)
def serve():
    s, _ = l.accept()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, lin)
    while s.recv(1 << 16):
        pass
threading.Thread(target=serve, daemon=True).start()
c = socket.create_connection((addr, port))
c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, lin)
for _ in range(32):
    c.sendall(b"x" * 4096)
end = time.time() + 30
while struct.unpack("i", fcntl.ioctl(c, termios.TIOCOUTQ, b"\0\0\0\0"))[0] and time.time() < end:
    time.sleep(0.01)
open(st, "w").write("%d acked\n" % c.getsockname()[1])
while "go" not in open(st).read():
    time.sleep(0.02)
c.send(b"z")
while os.path.exists(st):
    time.sleep(0.02)
os._exit(0)
EOF2
# VALUE of ksight_tcp_NAME for the flow's row in serve's /metrics (empty: none yet)
gmetric() {
	t_get "$URL" | awk -v m="ksight_tcp_$1" -v l="local=\"$ADDR:$GPORT_C\"" -v r="remote=\"$ADDR:$GPORT\"" \
		'index($0, m "{") == 1 && index($0, l) && index($0, r) { print $NF; exit }'
}
# gmetric_wait NAME MIN: waits up to T_WAIT s for the flow's NAME to reach MIN; prints it
gmetric_wait() {
	_gi=0
	while :; do
		_gv=$(gmetric "$1")
		[ -n "$_gv" ] && [ "${_gv%.*}" -ge "$2" ] && break
		_gi=$((_gi + 1))
		[ $_gi -gt $((T_WAIT * 10)) ] && break
		sleep 0.1
	done
	echo "$_gv"
}
t_serve_start "$T_TMP/serve.err" "" "gauge: serve starts" --collectors tcp --by tcp=flow
: >"$T_TMP/gauge.st"
ip netns exec "$N" python3 "$T_TMP/gauge.py" "$ADDR" $GPORT "$T_TMP/gauge.st" &
G_PID=$!
t_wait_for "$T_TMP/gauge.st" acked || t_fail "gauge: the flow's data is acknowledged" "$(cat "$T_TMP/gauge.st")"
GPORT_C=$(cut -d' ' -f1 "$T_TMP/gauge.st")
before=$(gmetric_wait cwnd_last 1)
ip netns exec "$N" nft add rule inet ksight_tl input tcp dport $GPORT drop
echo go >>"$T_TMP/gauge.st"
# two retransmits (RTO >= 200 ms, then doubling) drained into serve's totals
retr=$(gmetric_wait retransmits_total 2)
after=$(gmetric cwnd_last)
gmin=$(gmetric cwnd_min)
gmax=$(gmetric cwnd_max)
rm -f "$T_TMP/gauge.st"
wait $G_PID
kill -TERM $S_PID
wait $S_PID
echo "gauge: cwnd_last $before before the drops, $after after $retr retransmits; min $gmin max $gmax"
t_in "gauge: the flow retransmitted" 2 1000000 "${retr%.*}"
t_in "gauge: the flow had a window before the drops" 1 1000000 "$before"
t_eq "gauge: cwnd_last after retransmit-only intervals is the last sample's" "$before" "$after"
t_in "gauge: cwnd_min is a real window, not an empty interval's 0" 1 "$after" "$gmin"
t_in "gauge: cwnd_max is at least the last window" "$after" 1000000 "$gmax"
exit $T_FAILED
