# Integration: `ksight serve --pin DIR` keeps a gauge's no-sample bit across a restart: a tcp row saved without a cwnd sample, given one after the restart, shows that sample's cwnd_min (it read 0: the restored row's 0 taken for a sample, which a min keeps).
. tests/lib.sh
need_root serve_pin_gauge
for tool in curl python3; do
	command -v $tool >/dev/null 2>&1 || { t_skip serve_pin_gauge "no $tool"; exit 0; }
done
BPFFS=/sys/fs/bpf
D=$BPFFS/ksight-gauge-$$
mounted_before=$(awk -v m=$BPFFS '$2 == m && $3 == "bpf" { print 1; exit }' /proc/mounts)
S_PID=
T_CLEANUP='kill -KILL $S_PID 2>/dev/null; wait 2>/dev/null; "$KSIGHT" unpin "$D" >/dev/null 2>&1;
	[ -z "$mounted_before" ] && umount $BPFFS 2>/dev/null'
NAME=kspg$$
PORT=$(t_free_port)

# tcp NAME what: as a process named NAME, "refused": one connect to a closed port (a row with a
# failed connect and no cwnd sample); "transfer": 2 MB over loopback (cwnd samples)
tcp() {
	python3 - "$NAME" "$1" "$PORT" <<'PY'
import ctypes, socket, sys, threading
ctypes.CDLL(None).prctl(15, sys.argv[1].encode(), 0, 0, 0)  # PR_SET_NAME: the comm tcp reports
if sys.argv[2] == "refused":
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[3])))
    except ConnectionRefusedError:
        pass
    sys.exit(0)
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
def drain():
    c, _ = s.accept()
    while c.recv(65536):
        pass
t = threading.Thread(target=drain); t.start()
c = socket.create_connection(s.getsockname()); c.sendall(b"x" * 2000000); c.close(); t.join()
PY
}
# series SERIES: its value on a text scrape (empty when absent)
series() { curl -s --max-time 5 "$URL?format=text" | sed -n "s/^$1 //p"; }
# poll SERIES [MIN]: waits (up to 20 s) until SERIES has a value (at least MIN when given); prints it
poll() {
	for _ in $(seq 1 80); do
		_v=$(series "$1")
		[ -n "$_v" ] && { [ -z "$2" ] || [ "$_v" -ge "$2" ] 2>/dev/null; } && break
		sleep 0.25
	done
	echo "$_v"
}
start() { t_serve_start "$T_TMP/s$1.err" "" "serve --pin starts ($1)" --pin "$D" --collectors tcp --by tcp=comm -i 0.2; }

start 1
tcp refused
t_eq "before the restart: the failed connect, under $NAME" 1 "$(poll "ksight_tcp_connect_fails_total{comm=\"$NAME\"}")"
kill -TERM $S_PID
wait $S_PID
t_eq "SIGTERM under --pin: exit 0" 0 $?
start 2
t_eq "after the restart: the failed connect kept" 1 "$(series "ksight_tcp_connect_fails_total{comm=\"$NAME\"}")"
tcp transfer
# the restored row shows its gauges as 0 until a sample comes: wait for the transfer's drain
max=$(poll "ksight_tcp_cwnd_max{comm=\"$NAME\"}" 1)
t_ok "after the restart: the transfer's cwnd_max ($max)" test "${max:-0}" -gt 0
min=$(series "ksight_tcp_cwnd_min{comm=\"$NAME\"}")
t_ok "after the restart: cwnd_min is the transfer's ($min), not the saved row's 0" test "${min:-0}" -gt 0
kill -TERM $S_PID
wait $S_PID
S_PID=
"$KSIGHT" unpin "$D" >/dev/null 2>&1
t_eq "unpin: DIR gone" no "$([ -e "$D" ] && echo yes || echo no)"
[ "$T_FAILED" = 0 ]
