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
		for m in $(grep -oE '(ksight|process)_[a-z_]*' "$PD/ksight-rules.yml" | grep -vx 'ksight_' | sort -u); do
			t_ok "rules name a served metric: $m" grep -qE "^$m[{ ]|^# TYPE $m histogram" "$T_TMP/m.txt"
		done
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
# Kubernetes: kustomize builds the DaemonSet, kubernetes-models validates it offline against the schema,
# and its privilege matches the systemd unit's
K8S=deploy/kubernetes
: "${KS_NPM:=/opt/ksight-npm/node_modules}"
if command -v kubectl >/dev/null 2>&1 && command -v node >/dev/null 2>&1 && [ -d "$KS_NPM/kubernetes-models" ]; then
	kubectl kustomize "$K8S" >"$T_TMP/k8s.yaml" 2>"$T_TMP/k8s.err"
	t_eq "kubectl kustomize deploy/kubernetes: exit 0" "0 " "$? $(cat "$T_TMP/k8s.err")"
	NODE_PATH=$KS_NPM node tests/integration/k8s_validate.js <"$T_TMP/k8s.yaml" >"$T_TMP/k8s.json" 2>"$T_TMP/val.err"
	t_eq "kubernetes-models: every manifest valid" "0 " "$? $(cat "$T_TMP/val.err")"
	t_eq "kustomize output: Namespace and DaemonSet" "Namespace DaemonSet" "$(jq -r '[.[].kind] | join(" ")' "$T_TMP/k8s.json")"
	# the validator does reject: a port that is not a number and an unknown update strategy
	sed 's/containerPort: 10464/containerPort: nine/; s/type: RollingUpdate/type: Sometimes/' "$T_TMP/k8s.yaml" |
		NODE_PATH=$KS_NPM node tests/integration/k8s_validate.js >/dev/null 2>"$T_TMP/val.bad"
	t_eq "kubernetes-models rejects a broken DaemonSet (2 errors named)" "1 2" \
		"$? $(grep -o 'containerPort must be integer\|updateStrategy/type must be equal' "$T_TMP/val.bad" | wc -l)"
	ds='.[] | select(.kind == "DaemonSet") | .spec.template.spec'
	c="$ds | .containers[0]"
	t_eq "DaemonSet: the unit's capabilities, all others dropped" \
		"$(sed -n 's/^AmbientCapabilities=//p' "$UNIT" | tr ' ' '\n' | sed 's/^CAP_//' | sort | tr '\n' ' ')ALL" \
		"$(jq -r "$c | .securityContext.capabilities | (.add | sort | join(\" \")) + \" \" + (.drop | join(\" \"))" "$T_TMP/k8s.json")"
	t_eq "DaemonSet: not privileged, no privilege escalation, read-only root" "false false true" \
		"$(jq -r "$c | .securityContext | \"\(.privileged) \(.allowPrivilegeEscalation) \(.readOnlyRootFilesystem)\"" "$T_TMP/k8s.json")"
	t_eq "DaemonSet: host pid namespace (the kernel's pids are the host's)" true "$(jq -r "$ds | .hostPID" "$T_TMP/k8s.json")"
	t_eq "DaemonSet: host mounts (read-only but bpffs)" \
		"/sys/fs/bpf:false /sys/fs/cgroup:true /sys/kernel/btf:true /sys/kernel/tracing:true /var/log/pods:true" \
		"$(jq -r "[$c | .volumeMounts[] | \"\(.mountPath):\(.readOnly // false)\"] | sort | join(\" \")" "$T_TMP/k8s.json")"
	t_eq "DaemonSet: every mount has a hostPath volume" "" \
		"$(jq -r "$ds | . as \$s | .containers[0].volumeMounts[].name | select(. as \$n | [\$s.volumes[] | select(.name == \$n and .hostPath)] | length == 0)" "$T_TMP/k8s.json")"
	# Pod Security admission: hostPID, hostNetwork and hostPath pass only the privileged level
	t_eq "Namespace: pod-security enforce privileged (hostPID, hostNetwork, hostPath need it)" "privileged true true true" \
		"$(jq -r '(.[] | select(.kind == "Namespace") | .metadata.labels["pod-security.kubernetes.io/enforce"]) + " " +
			(.[] | select(.kind == "DaemonSet") | .spec.template.spec | "\(.hostPID) \(.hostNetwork) \([.volumes[] | select(.hostPath)] | length > 0)")' "$T_TMP/k8s.json")"
	# labels: the selector picks the template's pods, and the DaemonSet carries the pods' app.kubernetes.io/* set
	dsm='.[] | select(.kind == "DaemonSet")'
	unsel() { jq -r "$dsm | .spec.template.metadata.labels as \$l | .spec.selector.matchLabels | to_entries[] | select(\$l[.key] != .value) | .key" "$1"; }
	t_eq "DaemonSet: selector.matchLabels within the template's labels" "" "$(unsel "$T_TMP/k8s.json")"
	jq "($dsm | .spec.selector.matchLabels[\"app.kubernetes.io/name\"]) = \"ksight-exporter\"" "$T_TMP/k8s.json" >"$T_TMP/k8s.badsel.json"
	t_eq "the selector check sees a selector the pods do not match" app.kubernetes.io/name "$(unsel "$T_TMP/k8s.badsel.json")"
	appl='with_entries(select(.key | startswith("app.kubernetes.io/")))'
	t_eq "DaemonSet: its app.kubernetes.io/* labels are its pods'" true \
		"$(jq -r "$dsm | (.metadata.labels | $appl) == (.spec.template.metadata.labels | $appl) and (.metadata.labels | $appl | length > 0)" "$T_TMP/k8s.json")"
	# probes and the scrape annotation go where serve listens: /healthz on --listen's port, over HTTP
	# unless a --web.config.file is given (then its TLS decides, and the probes say HTTPS)
	probes() {
		jq -r '.[] | select(.kind == "DaemonSet") | .spec.template | .metadata.annotations["prometheus.io/port"] as $ap |
			.spec.containers[0] | .ports as $ports | ([.args[] | select(startswith("--listen")) | capture(":(?<p>[0-9]+)$").p][0]) as $lp |
			[(.readinessProbe, .livenessProbe) | .httpGet | "\(.scheme // "HTTP") \(.path) \(if (.port | type) == "string"
				then (.port as $n | $ports[] | select(.name == $n) | .containerPort) else .port end)"] +
			["annotation \($ap)", "listen \($lp)"] | join(", ")' "$1"
	}
	PROBES=$(probes "$T_TMP/k8s.json")
	t_eq "DaemonSet: both probes GET /healthz on the listen port, the annotation names it" \
		"HTTP /healthz 10464, HTTP /healthz 10464, annotation 10464, listen 10464" "$PROBES"
	jq '(.[] | select(.kind == "DaemonSet") | .spec.template.spec.containers[0].ports[0].containerPort) = 10465' \
		"$T_TMP/k8s.json" >"$T_TMP/k8s.badport.json"
	t_ok "the probe check sees a named port that is not the listen port" \
		sh -c "[ \"\$1\" != \"$PROBES\" ]" - "$(probes "$T_TMP/k8s.badport.json")"
	# and they answer so under auth: the container's arguments with a web config of basic_auth_users,
	# the probe's path without credentials gets 200, /metrics 401
	PPATH=$(jq -r '.[] | select(.kind == "DaemonSet") | .spec.template.spec.containers[0].readinessProbe.httpGet.path' "$T_TMP/k8s.json")
	KP=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	printf 'basic_auth_users:\n  prom: %s\n' "$(python3 -W ignore -c 'import crypt; print(crypt.crypt("pw", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16)))')" >"$T_TMP/web.yml"
	pargs=$(jq -r "$c | .args[]" "$T_TMP/k8s.json" | sed "s/\$(NODE_IP):10464/127.0.0.1:$KP/" | tr '\n' ' ')
	# shellcheck disable=SC2086
	"$KSIGHT" $pargs --web.config.file "$T_TMP/web.yml" --collectors syscalls 2>"$T_TMP/probe.err" &
	S_PID=$!
	if t_wait_for "$T_TMP/probe.err" "listening on"; then
		pc() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@"; }
		t_eq "under basic auth: the probe's GET $PPATH without credentials 200, /metrics without 401, with 200" "200 401 200" \
			"$(pc "http://127.0.0.1:$KP$PPATH") $(pc "http://127.0.0.1:$KP/metrics") $(pc -u prom:pw "http://127.0.0.1:$KP/metrics")"
	else
		t_fail "serve with the container's arguments and basic auth starts" "$(cat "$T_TMP/probe.err")"
	fi
	kill -TERM "$S_PID" 2>/dev/null
	wait "$S_PID" 2>/dev/null
	S_PID=
	# the container's arguments are ones ksight takes: run them (NODE_IP as loopback, any port)
	args=$(jq -r "$c | .args[]" "$T_TMP/k8s.json" | sed 's/\$(NODE_IP):10464/127.0.0.1:0/' | tr '\n' ' ')
	# shellcheck disable=SC2086
	"$KSIGHT" $args --collectors syscalls -d 1 >/dev/null 2>"$T_TMP/args.err"
	t_eq "DaemonSet: ksight runs with the container's arguments" "0" "$?"
else
	t_skip "kubernetes manifests" "no kubectl, node or kubernetes-models (scripts/setup.sh installs them)"
fi

# Grafana and the rules: every query of the dashboard, run against a real Prometheus scraping a real serve,
# returns data, and every alerting rule evaluates there without error
DASH=deploy/grafana/ksight.json
if command -v prometheus >/dev/null 2>&1 && command -v curl >/dev/null 2>&1; then
	t_ok "dashboard: valid JSON with panels" sh -c "jq -e '.panels | length >= 5' '$DASH' >/dev/null"
	free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
	"$KSIGHT" serve --listen 127.0.0.1:0 2>"$T_TMP/g.err" &
	G_PID=$!
	# a second serve whose mem rows overflow a cap of 1 at once: its folds must fire KsightSeriesFolded
	"$KSIGHT" serve --listen 127.0.0.1:0 --collectors mem --max-series 1 2>"$T_TMP/f.err" &
	F_PID=$!
	T_CLEANUP='kill -KILL $G_PID $F_PID $GP_PID $S_PID 2>/dev/null; wait 2>/dev/null; rm -f "$IOF"; [ -n "${PRIV_DIR:-}" ] && rm -rf "$PRIV_DIR"'
	if t_wait_for "$T_TMP/g.err" "listening on" && t_wait_for "$T_TMP/f.err" "listening on"; then
		GSP=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\)/metrics|\1|p' "$T_TMP/g.err")
		FSP=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\)/metrics|\1|p' "$T_TMP/f.err")
		GPP=$(free_port)
		# one job ingests native histograms (protobuf), one the classic buckets (text): both halves of each "or";
		# a third reads OpenMetrics, so the rules meet every format serve writes
		cat >"$T_TMP/gprom.yml" <<EOT
global: { scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s }
rule_files: ['$(pwd)/$PD/ksight-rules.yml']
scrape_configs:
  - job_name: ksight
    static_configs: [{ targets: ['127.0.0.1:$GSP'] }]
  - job_name: ksight-classic
    params: { format: [text] }
    static_configs: [{ targets: ['127.0.0.1:$GSP'] }]
  - job_name: ksight-openmetrics
    params: { format: [openmetrics] }
    static_configs: [{ targets: ['127.0.0.1:$GSP'] }]
  - job_name: ksight-folding
    static_configs: [{ targets: ['127.0.0.1:$FSP'] }]
EOT
		prometheus --config.file="$T_TMP/gprom.yml" --storage.tsdb.path="$T_TMP/gtsdb" \
			--web.listen-address=127.0.0.1:$GPP --enable-feature=native-histograms >"$T_TMP/gprom.log" 2>&1 &
		GP_PID=$!
		# data for every panel: block I/O on a real disk, failing syscalls, TCP (the scrapes themselves)
		IOF=$(pwd)/build/ksight-deploy-io.$$
		for _ in $(seq 1 20); do
			dd if=/dev/zero of="$IOF" bs=64k count=8 oflag=direct,dsync 2>/dev/null
			sleep 0.5
		done &
		_io=$!
		"$WORKLOADS/sysload" -e 2000 >/dev/null &
		_sl=$!
		sleep 0.5
		kill -USR1 $_sl 2>/dev/null
		gq() {
			curl -s --max-time 5 --data-urlencode "query=$1" "http://127.0.0.1:$GPP/api/v1/query" |
				jq -r '[.data.result[]? | .value[1] | select(. != "NaN")] | length' 2>/dev/null
		}
		# the dashboard's variables as Grafana fills them: all nodes, a 1 m rate window
		jq -r '.panels[] | .title as $t | .targets[] | [$t, (.expr | gsub("\n"; " "))] | @tsv' "$DASH" |
			sed 's/\$node/.*/g; s/\$__rate_interval/1m/g' >"$T_TMP/queries.tsv"
		end=$(($(date +%s) + 60))
		while IFS="$(printf '\t')" read -r title expr; do
			n=0
			while :; do
				n=$(gq "$expr")
				[ "${n:-0}" -gt 0 ] || [ "$(date +%s)" -ge $end ] && break
				sleep 1
			done
			t_ok "dashboard panel '$title': query returns data ($n series)" test "${n:-0}" -gt 0
		done <"$T_TMP/queries.tsv"
		nodes=$(curl -s -G --data-urlencode 'match[]=ksight_scrapes_total' "http://127.0.0.1:$GPP/api/v1/label/instance/values" | jq '.data | length')
		t_ok "dashboard variable node: label_values(ksight_scrapes_total, instance) has the node" test "${nodes:-0}" -gt 0
		wait $_sl $_io 2>/dev/null

		# the rules test's input series are shaped as this Prometheus stores serve's
		python3 tests/integration/rules_shape.py "$GPP" "$PD/ksight-rules.test.yml" >"$T_TMP/shape.out" 2>&1
		t_eq "rules test: every input series shaped as served ($(tail -1 "$T_TMP/shape.out"))" "0 " \
			"$? $(grep -v 'shaped as served$' "$T_TMP/shape.out" | head -5)"
		# every job scraped whole 3 times (each counter has a rate), then one more evaluation of the rules: all healthy
		rules() { curl -s --max-time 5 "http://127.0.0.1:$GPP/api/v1/rules"; }
		nrules=$(grep -c '^ *- alert:' "$PD/ksight-rules.yml")
		end=$(($(date +%s) + 30))
		until [ "$(gq 'min(sum_over_time(up[1m])) >= 3 and count(up) == 4')" = 1 ] || [ "$(date +%s)" -ge $end ]; do
			sleep 0.2
		done
		t_eq "rules: the 4 jobs each scraped without error 3 times" 1 "$(gq 'min(sum_over_time(up[1m])) >= 3 and count(up) == 4')"
		ev0=$(rules | jq -r '[.data.groups[].lastEvaluation] | join(" ")')
		until [ "$(rules | jq -r '[.data.groups[].lastEvaluation] | join(" ")')" != "$ev0" ] || [ "$(date +%s)" -ge $end ]; do
			sleep 0.2
		done
		rules >"$T_TMP/rules.json"
		t_eq "rules: all $nrules evaluated against the scrapes of three formats, every one healthy" \
			"$nrules ok" "$(jq -r '[.data.groups[].rules[]] | "\(length) \([.[] | select(.health != "ok" or (.lastError // "") != "")
				| "\(.name): \(.health) \(.lastError // "")"] | if length == 0 then "ok" else join("; ") end)"' "$T_TMP/rules.json")"
		# folds on the capped serve fire the alert there, for mem
		firing() {
			curl -s --max-time 5 "http://127.0.0.1:$GPP/api/v1/alerts" | jq -r --arg i "127.0.0.1:$FSP" \
				'[.data.alerts[] | select(.labels.alertname == "KsightSeriesFolded" and .state == "firing"
					and .labels.instance == $i) | .labels.collector] | join(" ")'
		}
		until [ "$(firing)" = mem ] || [ "$(date +%s)" -ge $end ]; do
			sleep 0.2
		done
		t_eq "KsightSeriesFolded fires for the serve capped at 1 series, collector mem" mem "$(firing)"
	else
		t_fail "dashboard: serve starts" "$(cat "$T_TMP/g.err" "$T_TMP/f.err")"
	fi
	kill -TERM $G_PID $F_PID $GP_PID 2>/dev/null
	wait $G_PID $F_PID $GP_PID 2>/dev/null
	rm -f "$IOF"
else
	t_skip "grafana dashboard" "no prometheus"
fi
exit $T_FAILED
