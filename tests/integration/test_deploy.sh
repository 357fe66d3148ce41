# Integration: deploy/ is valid and true: the systemd unit (verify, capabilities parsed, and those capabilities suffice), Prometheus config and rules.
. tests/lib.sh
need_root deploy
UNIT=deploy/systemd/ksight.service
PD=deploy/prometheus

# systemd: the unit verifies (its ExecStart must exist: the built binary stands in) and the dump shows the capabilities
if command -v systemd-analyze >/dev/null 2>&1; then
	sed "s|/usr/local/bin/ksight|$(cd "$(dirname "$KSIGHT")" && pwd)/$(basename "$KSIGHT")|" "$UNIT" >"$T_TMP/ksight.service"
	SYSTEMD_LOG_LEVEL=debug systemd-analyze verify "$T_TMP/ksight.service" >"$T_TMP/verify.out" 2>&1
	t_eq "systemd-analyze verify: exit 0" 0 $?
	systemd-analyze verify "$T_TMP/ksight.service" >"$T_TMP/verify.plain" 2>&1
	t_eq "systemd-analyze verify: no warnings" "" "$(cat "$T_TMP/verify.plain")"
	t_eq "unit dump: ambient capabilities" "cap_dac_read_search cap_perfmon cap_bpf" \
		"$(sed -n 's/^[[:space:]]*AmbientCapabilities: //p' "$T_TMP/verify.out" | head -1)"
	t_eq "unit dump: bounding set the same (no full root)" "cap_dac_read_search cap_perfmon cap_bpf" \
		"$(sed -n 's/^[[:space:]]*CapabilityBoundingSet: //p' "$T_TMP/verify.out" | head -1)"
	t_ok "unit: DynamicUser, NoNewPrivileges" sh -c "grep -qx 'DynamicUser=yes' '$UNIT' && grep -qx 'NoNewPrivileges=yes' '$UNIT'"
else
	t_skip "systemd unit" "no systemd-analyze"
fi

# the unit's capabilities are enough: every collector serves as nobody with exactly those three
if command -v setpriv >/dev/null 2>&1 && setpriv --help 2>&1 | grep -q -- --ambient-caps && command -v curl >/dev/null 2>&1; then
	PRIV_DIR=$(mktemp -d /tmp/ksight-deploy.XXXXXX)
	chmod 755 "$PRIV_DIR"
	cp "$KSIGHT" "$PRIV_DIR/ksight"
	T_CLEANUP='[ -n "${S_PID:-}" ] && kill -KILL $S_PID 2>/dev/null; rm -rf "$PRIV_DIR"'
	caps=-all,+bpf,+perfmon,+dac_read_search
	setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=$caps --ambient-caps=$caps -- \
		"$PRIV_DIR/ksight" serve --listen 127.0.0.1:0 2>"$T_TMP/priv.err" &
	S_PID=$!
	if t_wait_for "$T_TMP/priv.err" "listening on"; then
		SP=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\)/metrics|\1|p' "$T_TMP/priv.err")
		# some block I/O and a TCP connection, so the rules' series exist
		dd if=/dev/zero of="$T_TMP/io" bs=64k count=16 oflag=direct 2>/dev/null
		curl -s -o /dev/null "http://127.0.0.1:$SP/healthz"
		sleep 2.5
		curl -s "http://127.0.0.1:$SP/metrics" >"$T_TMP/m.txt"
		t_eq "as nobody with the unit's capabilities: all six collectors serve" \
			"biolat mem offcpu runqlat syscalls tcp" \
			"$(sed -n 's/^ksight_collector_info{collector="\([a-z]*\)".*/\1/p' "$T_TMP/m.txt" | sort | tr '\n' ' ' | sed 's/ $//')"
		t_ok "as nobody: promtool check metrics" sh -c "promtool check metrics <'$T_TMP/m.txt'"
		# every metric the rules name is one the exporter writes
		for m in $(grep -o 'ksight_[a-z_]*' "$PD/ksight-rules.yml" | grep -v '^ksight_$' | sort -u); do
			t_ok "rules name a served metric: $m" grep -qE "^$m[{ ]|^# TYPE $m histogram" "$T_TMP/m.txt"
		done
		t_ok "rules' folded-series regex matches a served metric" grep -qE '^ksight_.+_other_folds_total' "$T_TMP/m.txt"
	else
		t_fail "as nobody with the unit's capabilities: serve starts" "$(cat "$T_TMP/priv.err")"
	fi
	kill -TERM "$S_PID" 2>/dev/null
	wait "$S_PID" 2>/dev/null
	S_PID=
else
	t_skip "unit capabilities" "no setpriv with --ambient-caps"
fi

# Prometheus: the scrape config, the rules, and the rules' unit tests (series that fire and that must not)
if command -v promtool >/dev/null 2>&1; then
	t_ok "promtool check config" sh -c "promtool check config '$PD/prometheus.yml' >/dev/null 2>&1"
	t_ok "promtool check rules" sh -c "promtool check rules '$PD/ksight-rules.yml' >/dev/null 2>&1"
	t_ok "promtool test rules" sh -c "cd '$PD' && promtool test rules ksight-rules.test.yml >/dev/null 2>&1"
	t_ok "every alert has a runbook naming a ksight command" sh -c \
		"[ \$(grep -c '^ *- alert:' '$PD/ksight-rules.yml') = \$(grep -c 'runbook: .*ksight ' '$PD/ksight-rules.yml') ]"
else
	t_skip "prometheus config" "no promtool"
fi
exit $T_FAILED
