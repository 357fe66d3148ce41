# Integration: `ksight serve` under load: 50 concurrent scrapes during heavy map churn get no 5xx; SIGHUP mid-scrape loses no counter; slow-header floods; NUL bytes in URLs.
. tests/lib.sh
need_root serve_robust
for tool in curl python3; do
	if ! command -v $tool >/dev/null 2>&1; then
		t_skip serve_robust "no $tool"
		exit 0
	fi
done
LOAD=tests/integration/serve_load.py
ABUSE=tests/integration/serve_abuse.py
before=$T_TMP/orphans.before
t_orphans >"$before"
S_PID= N_PID= H_PID= F_PID=
T_CLEANUP='kill -KILL $S_PID $N_PID $H_PID $W_PID $F_PID 2>/dev/null; wait 2>/dev/null'

# start_serve LOG ARGS...: sets S_PID and SP (the port)
start_serve() {
	_log=$1; shift
	"$KSIGHT" serve --listen 127.0.0.1:0 "$@" >/dev/null 2>"$_log" &
	S_PID=$!
	if ! t_wait_for "$_log" "listening on"; then
		t_fail "serve starts" "$(cat "$_log")"
		exit 1
	fi
	SP=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\)/metrics|\1|p' "$_log")
}

# --- heavy churn: short-lived processes, each a new name (new rows in mem's and syscalls' maps
# by comm, drained and deleted every 0.1 s, folded past --max-series), while 50 scrapers hit /metrics;
# the churn goes on until the scrapes are over (a second SIGUSR1 ends it), however slow the machine
start_serve "$T_TMP/s1.err" --collectors syscalls,mem,runqlat,tcp -i 0.1 --by syscalls=comm,syscall --max-series 300
"$WORKLOADS/namefork" 1000000 4 churn >"$T_TMP/nf.out" &
N_PID=$!
t_wait_for "$T_TMP/nf.out" "[0-9]"
kill -USR1 $N_PID
python3 $LOAD burst "$SP" 50 10 >"$T_TMP/burst.out" 2>&1
churning=$(kill -0 $N_PID 2>/dev/null && echo yes || echo no)
kill -USR1 $N_PID
wait $N_PID
N_PID=
read -r _ nf_bad nf_kids <<EOT
$(tail -1 "$T_TMP/nf.out")
EOT
t_eq "the churn ran children until the scrapes ended, every one fine" "0 yes" "$nf_bad $([ "${nf_kids:-0}" -gt 300 ] && echo yes)"
t_eq "50 concurrent scrapers x 10, three formats, during the churn: all 500 answered 200" "200:500" "$(cat "$T_TMP/burst.out")"
t_eq "the churn was still going when the scrapes ended" yes "$churning"
m=$(curl -s "http://127.0.0.1:$SP/metrics")
folds=$(echo "$m" | sed -n 's/^ksight_other_folds_total{collector="mem"} \([0-9]*\).*/\1/p')
t_ok "the churn overflowed the series cap (mem folded ${folds:-0} rows)" test "${folds:-0}" -gt 0
t_eq "serve still healthy" 200 "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$SP/healthz")"
kill -TERM $S_PID
wait $S_PID
t_eq "after the load: SIGTERM exits 0" 0 $?
S_PID=

# --- SIGHUP mid-scrape: a reload every 20 ms while 4 scrapers read and a workload makes exactly N calls;
# the count is never seen to decrease, no scrape fails, and the final count is exact
N=30000
cat >"$T_TMP/web.yml" <<EOT
basic_auth_users:
  prom: '$(python3 -W ignore -c 'import crypt; print(crypt.crypt("pw", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << 4)))')'
EOT
w_start -n $N
start_serve "$T_TMP/s2.err" --collectors syscalls,runqlat -p "$W_PID" -i 0.1 --web.config.file "$T_TMP/web.yml"
python3 $LOAD watch "$SP" 6 prom:pw 'ksight_syscalls_calls_total{syscall="getppid",nr="110"}' >"$T_TMP/watch.out" 2>&1 &
H_PID=$!
sleep 0.5
kill -USR1 "$W_PID"
hups=0
while kill -0 $H_PID 2>/dev/null; do
	kill -HUP $S_PID
	hups=$((hups + 1))
	sleep 0.02
done
wait $H_PID
H_PID=
wait "$W_PID"
W_PID=
reloads=$(grep -c "reloaded" "$T_TMP/s2.err")
t_ok "SIGHUPs sent during the scrapes ($hups), reloads done ($reloads)" test "$reloads" -gt 10
read -r scrapes failed decreases last <<EOT
$(sed 's/[a-z]*=//g' "$T_TMP/watch.out")
EOT
t_ok "scrapes during the reloads: $scrapes" test "${scrapes:-0}" -gt 20
t_eq "no scrape failed across the reloads" 0 "$failed"
t_eq "the counter never decreased across the reloads" 0 "$decreases"
final=$(curl -s -u prom:pw "http://127.0.0.1:$SP/metrics" | sed -n 's/^ksight_syscalls_calls_total{syscall="getppid",nr="110"} //p')
t_eq "after the reloads: the exact getppid count" $N "$final"
t_ok "the watchers saw the count rise to the end ($last of $N)" test "${last:-0}" -gt 0
kill -TERM $S_PID
wait $S_PID
t_eq "SIGTERM exits 0" 0 $?
S_PID=

# --- slow clients: 1,010 connections, each sending one header line every 2 s (which resets the
# 10 s idle timeout), never the header's end.  From one address (127.0.0.2): past the per-address
# limit (128) they are refused at once, and a scrape from another answers within 1 s while the
# rest trickle on.  Spread over 20 addresses (51 each, under that limit): they fill the server's
# 1,000 slots (the rest wait in the kernel's accept queue), and each is closed at the 5 s
# whole-header deadline, not when it gives up: those queued get a slot, and their own 5 s, then.
start_serve "$T_TMP/s3.err" --collectors syscalls
python3 $ABUSE slow "$SP" 1010 127.0.0.2 30 >"$T_TMP/flood1.out" 2>&1 &
F_PID=$!
t_wait_for "$T_TMP/flood1.out" "open 1010"
t_eq "1,010 slow clients from one address: a scrape from another answers within 1 s" 200 \
	"$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "http://127.0.0.1:$SP/metrics")"
kill $F_PID
wait $F_PID 2>/dev/null
python3 $ABUSE slow "$SP" 1010 127.0.1.1+20 14 4.5 6.5 >"$T_TMP/flood2.out" 2>&1 &
F_PID=$!
t_wait_for "$T_TMP/flood2.out" "^early"
wait $F_PID
F_PID=
read -r _ early _ reaped _ ontime _ latest _ open <<EOT
$(tail -1 "$T_TMP/flood2.out")
EOT
t_eq "1,010 slow clients from 20 addresses: none left open after 14 s" 0 "${open:-?}"
t_ok "they filled the server: ${ontime:-?} of them closed 4.5 to 6.5 s after connecting (the deadline)" \
	test "${ontime:-0}" -ge 900
t_ok "the ones queued behind them too, the last after ${latest:-?} s (at most two deadlines and a line)" \
	awk "BEGIN { exit !(${latest:-99} <= 12.5) }"
t_eq "after them: a scrape answers within 1 s" 200 \
	"$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "http://127.0.0.1:$SP/metrics")"
tmo=$(curl -s "http://127.0.0.1:$SP/metrics" | sed -n 's/^ksight_http_header_timeouts_total \([0-9]*\).*/\1/p')
t_ok "ksight_http_header_timeouts_total counts them (${tmo:-none} >= ${reaped:-?} > 0)" \
	test "${tmo:-0}" -ge "${reaped:-1}" -a "${reaped:-0}" -gt 0

# --- a NUL byte decoded from a path or a query is a 400: C strings would cut it short
for u in '/metrics%00.html' '/metrics?format=text%00x' '/healthz%00'; do
	t_eq "GET $u: 400" 400 "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$SP$u")"
done
t_eq "and serving goes on" 200 "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$SP/metrics")"
kill -TERM $S_PID
wait $S_PID
t_eq "after the floods: SIGTERM exits 0" 0 $?
S_PID=
t_no_leaks "serve robustness: nothing left attached" "$before"
exit $T_FAILED
