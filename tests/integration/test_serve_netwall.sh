# Integration: `ksight serve` with net, wall and tcp under promtool and a real Prometheus scrape: the page is clean, and queries return each collector's series with the workloads' numbers (net's sends, wall's sleep, tcp's cwnd and ssthresh gauges).
. tests/lib.sh
need_root serve_netwall
for tool in prometheus promtool curl jq python3; do
	if ! command -v $tool >/dev/null 2>&1; then
		t_skip serve_netwall "no $tool"
		exit 0
	fi
done
S_PID= P_PID= T_PID=
T_CLEANUP='for p in $S_PID $P_PID $T_PID; do kill -KILL $p 2>/dev/null; done; wait 2>/dev/null'

t_serve_start "$T_TMP/serve.err" "" "serve with net, wall and tcp starts" --collectors net,wall,tcp --by net=comm --by wall=comm -i 0.2
SP=${URL#http://127.0.0.1:}
SP=${SP%%/*}
PP=$(t_free_port)
cat >"$T_TMP/prom.yml" <<EOT
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: ksight
    static_configs: [{ targets: ['127.0.0.1:$SP'] }]
EOT
prometheus --config.file="$T_TMP/prom.yml" --storage.tsdb.path="$T_TMP/tsdb" --web.listen-address=127.0.0.1:$PP >"$T_TMP/prom.log" 2>&1 &
P_PID=$!
t_eq "prometheus scrapes serve" 1 "$(t_prompoll 'up{job="ksight"}' 1)"

# The workloads, each under a name of its own: N UDP datagrams over loopback (net's send stage
# by comm), 20 sleeps of 10 ms (wall's sleep, by comm), a 4 MB TCP transfer (tcp's cwnd and
# ssthresh, by comm) that holds its connection open until told.
N=30
NU=ksnu$$
cp "$WORKLOADS/netudp" "$T_TMP/$NU"
PORT=$((20000 + $$ % 20000))
: >"$T_TMP/recv.out"
"$T_TMP/$NU" recv 127.0.0.1 $PORT $N >"$T_TMP/recv.out" &
R_PID=$!
t_wait_for "$T_TMP/recv.out" ready
"$T_TMP/$NU" send 127.0.0.1 $PORT $N 100 >/dev/null
wait $R_PID
g_start "$T_TMP/sl" "$WORKLOADS/sleeper" -k 20 -m 10 -x -n kswsl$$
kill -USR1 $G_PID
wait $G_PID
TCPNAME=kstcp$$
mkfifo "$T_TMP/tcp.in"
python3 - "$TCPNAME" <"$T_TMP/tcp.in" >"$T_TMP/tcp.out" 2>&1 <<'PY' &
import ctypes, socket, sys, threading
ctypes.CDLL(None).prctl(15, sys.argv[1].encode(), 0, 0, 0)  # PR_SET_NAME: the thread's comm
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
def drain():
    c, _ = s.accept()
    while c.recv(65536):
        pass
threading.Thread(target=drain, daemon=True).start()
c = socket.create_connection(s.getsockname())
c.sendall(b"x" * 4000000)
print("sent", flush=True)
sys.stdin.read()
PY
T_PID=$!
exec 3>"$T_TMP/tcp.in"
t_wait_for "$T_TMP/tcp.out" sent || t_fail "the TCP transfer" "$(cat "$T_TMP/tcp.out")"

t_eq "net: Prometheus has the $N sends of $NU" $N "$(t_prompoll 'sum(ksight_net_packets_total{stage="send",comm="'$NU'"})' $N)"
# 20 sleeps of 10 ms: 0.2 s and more (timer slack, a late wakeup)
# QUERY's first value once it has one (an expression that filters: once it holds), up to 20 s
promsome() {
	_e=$(($(date +%s) + 20))
	until [ -n "$(t_promq "$1")" ] || [ "$(date +%s)" -ge $_e ]; do sleep 0.5; done
	t_promq "$1"
}
promsome "ksight_wall_sleep_seconds_total{comm=\"kswsl$$\"} >= 0.2" >/dev/null
v=$(t_promq "ksight_wall_sleep_seconds_total{comm=\"kswsl$$\"}")
awk -v v="$v" 'BEGIN { exit !(v >= 0.2 && v < 2) }' && t_pass "wall: Prometheus has the sleeper's 20 x 10 ms of sleep ($v s)" ||
	t_fail "wall: the sleeper's 20 x 10 ms of sleep in Prometheus" "'$v'"
promsome "ksight_tcp_cwnd_min{comm=\"$TCPNAME\"} > 0" >/dev/null
for g in cwnd_min cwnd_max cwnd_last ssthresh_last; do
	v=$(t_promq "ksight_tcp_$g{comm=\"$TCPNAME\"}")
	awk -v v="$v" 'BEGIN { exit !(v > 0) }' && t_pass "tcp: Prometheus has the transfer's $g ($v)" ||
		t_fail "tcp: the transfer's $g in Prometheus" "'$v'"
done
exec 3>&-
wait $T_PID
T_PID=

# the page itself, as Prometheus reads it
t_get "$URL" >"$T_TMP/m.txt"
promtool check metrics <"$T_TMP/m.txt" >"$T_TMP/promtool.out" 2>&1
t_eq "promtool check metrics: clean" "0 " "$? $(cat "$T_TMP/promtool.out")"
t_eq "the page has net, wall and tcp families" "3" \
	"$(grep -c '^# TYPE ksight_\(net_packets_total\|wall_sleep_seconds_total\|tcp_cwnd_min\) ' "$T_TMP/m.txt")"
kill -TERM $S_PID
wait $S_PID
t_eq "SIGTERM: exit 0" 0 $?
S_PID=
# wall by thread (its default key) with its rows at the cap: a thread that exits gets a row of its
# own, rows unchanged for a tenth of the TTL (3 s here) making room for it.  At the cap of 1000,
# exited threads (a busy host's fill it in seconds) kept theirs for the whole TTL and every later
# thread folded into "other": the sleeper's row never came (20 s).  Here the cap is 500, filled by
# 600 processes of the test's own, above what a host's own threads keep changing.
t_serve_start "$T_TMP/serve2.err" "" "serve with wall by thread starts" --collectors wall --max-series 500 --series-ttl 30s -i 0.2
for i in $(seq 600); do /bin/true; done
# the page's value of series S, up to 20 s until the awk condition C on it (v) holds, a process
# started each round (a new key at the cap: what makes room)
pagesome() {
	_e=$(($(date +%s) + 20))
	until v=$(t_get "$URL" | awk -v s="$1" 'index($0, s) == 1 { print $NF; exit }') && [ -n "$v" ] &&
		awk -v v="$v" "BEGIN { exit !($2) }" || [ "$(date +%s)" -ge $_e ]; do /bin/true; sleep 0.2; done
	echo "$v"
}
t_in "wall by thread: 600 processes fill the 500 rows (ksight_other_folds_total)" 1 1000000 \
	"$(pagesome 'ksight_other_folds_total{collector="wall"}' 'v > 0')"
t_in "wall by thread: at the cap, rows 3 s unchanged leave (ksight_expired_rows_total, TTL 30 s)" 1 1000000 \
	"$(pagesome 'ksight_expired_rows_total{collector="wall"}' 'v > 0')"
g_start "$T_TMP/sl2" "$WORKLOADS/sleeper" -k 20 -m 10 -x -n kswst$$
SL_TID=$G_PID
kill -USR1 $G_PID
wait $G_PID
v=$(pagesome "ksight_wall_sleep_seconds_total{tid=\"$SL_TID\",comm=\"kswst$$\"}" 'v >= 0.2')
awk -v v="$v" 'BEGIN { exit !(v >= 0.2 && v < 2) }' &&
	t_pass "wall by thread at the cap: the exited sleeper's row, its 20 x 10 ms of sleep ($v s)" ||
	t_fail "wall by thread at the cap: the exited sleeper's row" "'$v'; $(t_get "$URL" | grep -c '^ksight_wall_sleep_seconds_total') rows"
kill -TERM $S_PID
wait $S_PID
t_eq "serve with wall by thread: SIGTERM, exit 0" 0 $?
S_PID=
t_no_leaks net_
[ "$T_FAILED" = 0 ]
