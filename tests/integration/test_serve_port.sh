# Integration: `ksight serve` with no --listen listens on 127.0.0.1:10464, a port the Prometheus default-port allocations do not hold (not OpenTelemetry's 9464), and answers there.
. tests/lib.sh
need_root serve
if ss -Hltn 'sport = :10464' 2>/dev/null | grep -q .; then
	t_skip "serve default port" "127.0.0.1:10464 is taken here: $(ss -Hltnp 'sport = :10464' | head -1)"
	exit 0
fi
S_PID=
T_CLEANUP='[ -n "$S_PID" ] && kill -KILL $S_PID 2>/dev/null; wait 2>/dev/null'
"$KSIGHT" serve --collectors syscalls >/dev/null 2>"$T_TMP/err" &
S_PID=$!
if t_wait_for "$T_TMP/err" "listening on"; then
	t_eq "no --listen: listens on 127.0.0.1:10464" "http://127.0.0.1:10464/metrics" \
		"$(sed -n 's|.*listening on \(http://[^ ]*\)|\1|p' "$T_TMP/err")"
	t_get http://127.0.0.1:10464/metrics >"$T_TMP/m"
	t_ok "no --listen: /metrics answers on 10464" grep -q "^# TYPE ksight_" "$T_TMP/m"
else
	t_fail "no --listen: serve starts" "$(cat "$T_TMP/err")"
fi
kill -TERM "$S_PID" 2>/dev/null
wait "$S_PID"
t_eq "serve ends on SIGTERM: exit 0" 0 "$?"
S_PID=
exit $T_FAILED
