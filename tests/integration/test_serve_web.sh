# Integration: `ksight serve --web.config.file`: TLS and bcrypt basic auth (exporter-toolkit format), SIGHUP reload, bad configs.
. tests/lib.sh
need_root serve-web
for tool in openssl curl python3 prometheus; do
	if ! command -v $tool >/dev/null 2>&1; then
		t_skip serve-web "no $tool"
		exit 0
	fi
done
S_PID= P_PID=
T_CLEANUP='for p in $S_PID $P_PID; do kill -KILL $p 2>/dev/null; done; wait 2>/dev/null'

# bcrypt hashes as htpasswd -B makes them, here through libcrypt (python's crypt module), at the
# toolkit's documented cost 10 (~0.06 s a check here: what the timing checks below need to see)
bcrypt() {
	python3 -W ignore -c 'import crypt, sys; print(crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << 10)))' "$1"
}
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

D=$T_TMP/web
mkdir -p "$D"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
	-keyout "$D/key.pem" -out "$D/cert.pem" >/dev/null 2>&1
# relative paths: from the config file's directory, as the exporter toolkit reads them
cat >"$D/web.yml" <<EOT
tls_server_config:
  cert_file: cert.pem
  key_file: key.pem
basic_auth_users:
  prom: '$(bcrypt s3cret)'
EOT

"$KSIGHT" serve --collectors syscalls --listen 127.0.0.1:0 --web.config.file "$D/web.yml" 2>"$T_TMP/s.err" &
S_PID=$!
if ! t_wait_for "$T_TMP/s.err" "listening on"; then
	t_fail "serve with TLS starts" "$(cat "$T_TMP/s.err")"
	exit 1
fi
SP=$(sed -n 's|.*listening on https://127.0.0.1:\([0-9]*\)/metrics|\1|p' "$T_TMP/s.err")
t_ok "serve says https" test -n "$SP"
URL=https://127.0.0.1:$SP
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 --cacert "$D/cert.pem" "$@"; }
t_eq "TLS, no credentials: 401" 401 "$(code "$URL/metrics")"
t_eq "TLS, wrong password: 401" 401 "$(code -u prom:wrong "$URL/metrics")"
t_eq "TLS, unknown user: 401" 401 "$(code -u root:s3cret "$URL/metrics")"
t_eq "TLS, right password: 200" 200 "$(code -u prom:s3cret "$URL/metrics")"
# /healthz needs no credentials (a kubelet's probe sends none; it tells only "ok"), every other path does
t_eq "TLS, no credentials: /healthz 200" 200 "$(code "$URL/healthz")"
t_eq "TLS, no credentials: / 401" 401 "$(code "$URL/")"
t_eq "TLS, no credentials: /debug/pprof/profile 401" 401 "$(code "$URL/debug/pprof/profile?seconds=1")"
t_ok "TLS: the certificate verifies (no -k)" sh -c "curl -s --cacert '$D/cert.pem' -u prom:s3cret '$URL/metrics' | grep -q '^ksight_collector_info'"
# timing: an unknown user's password is checked against a dummy hash of the same cost, so it takes
# as long as a known user's wrong one (was 0.011 s against 0.08 s); medians of 7 tries each
tt() { curl -s -o /dev/null -w '%{time_total}\n' --cacert "$D/cert.pem" "$@" "$URL/metrics"; }
med() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
unk=$(for i in 1 2 3 4 5 6 7; do tt -u "nosuch$i:s3cret"; done | med)
wrong=$(for i in 1 2 3 4 5 6 7; do tt -u "prom:wrong$i"; done | med)
t_ok "an unknown user takes as long as a wrong password: median $unk s against $wrong s (within 2x)" \
	awk "BEGIN { r = $unk / $wrong; exit !(r > 0.5 && r < 2) }"
# the cache: 20 scrapes, each on a new TLS connection, cost one bcrypt (was one each: 1.17 CPU-s)
cpu() { awk '{ print $14 + $15 }' "/proc/$S_PID/stat"; }
c0=$(cpu)
for _ in $(seq 1 20); do curl -s -o /dev/null --cacert "$D/cert.pem" -u prom:s3cret "$URL/metrics"; done
c1=$(cpu)
cached=$(curl -s --cacert "$D/cert.pem" -u prom:s3cret "$URL/metrics" | sed -n 's/^ksight_http_auth_checks_total{by="cached"} //p')
t_ok "20 authenticated scrapes: ${cached:-?} passwords from the cache" test "${cached:-0}" -ge 20
t_ok "20 authenticated TLS scrapes: serve used $((c1 - c0)) CPU ticks (under 50; a bcrypt each would be ~110)" \
	test $((c1 - c0)) -lt 50
# keep-alive over TLS: the second request reuses the connection and its TLS session
curl -sv --cacert "$D/cert.pem" -u prom:s3cret "$URL/metrics" -o /dev/null "$URL/healthz" -o /dev/null 2>"$T_TMP/reuse"
t_ok "TLS: two requests over one connection" grep -q "Re-using existing connection" "$T_TMP/reuse"
t_eq "plain HTTP to the TLS port: no answer" 000 "$(curl -s -o /dev/null -w '%{http_code}' --max-time 3 "http://127.0.0.1:$SP/metrics")"

# a real Prometheus scrapes it with basic_auth and the CA
PP=$(free_port)
cat >"$T_TMP/prom.yml" <<EOT
global: { scrape_interval: 1s, scrape_timeout: 1s }
scrape_configs:
  - job_name: tls
    scheme: https
    tls_config: { ca_file: $D/cert.pem }
    basic_auth: { username: prom, password: s3cret }
    static_configs: [{ targets: ['127.0.0.1:$SP'] }]
EOT
prometheus --config.file="$T_TMP/prom.yml" --storage.tsdb.path="$T_TMP/tsdb" --web.listen-address=127.0.0.1:$PP \
	>"$T_TMP/prom.log" 2>&1 &
P_PID=$!
up=
for _ in $(seq 1 60); do
	up=$(curl -s --data-urlencode 'query=up{job="tls"}' "http://127.0.0.1:$PP/api/v1/query" | jq -r '.data.result[0].value[1] // empty')
	[ "$up" = 1 ] && break
	sleep 0.5
done
t_eq "Prometheus scrapes over TLS with basic auth" 1 "$up"
kill "$P_PID"
wait "$P_PID" 2>/dev/null
P_PID=

# SIGHUP: a new password replaces the old one; the counters go on
before=$(curl -s --cacert "$D/cert.pem" -u prom:s3cret "$URL/metrics" | awk '/^ksight_scrapes_total\{format="text"\}/ { print $2 }')
sed -i "s|prom: .*|prom: '$(bcrypt n3w)'|" "$D/web.yml"
kill -HUP "$S_PID"
t_wait_for "$T_TMP/s.err" "reloaded"
t_eq "after SIGHUP: the old password is refused" 401 "$(code -u prom:s3cret "$URL/metrics")"
t_eq "after SIGHUP: the new password works" 200 "$(code -u prom:n3w "$URL/metrics")"
after=$(curl -s --cacert "$D/cert.pem" -u prom:n3w "$URL/metrics" | awk '/^ksight_scrapes_total\{format="text"\}/ { print $2 }')
t_ok "after SIGHUP: counters kept ($before -> $after)" test "$after" -gt "$before"
# a changed min_version cannot apply to the running listener: said, not taken silently
sed -i 's|^  key_file: key.pem|&\n  min_version: TLS13|' "$D/web.yml"
kill -HUP "$S_PID"
t_wait_for "$T_TMP/s.err" "min_version and max_version apply from the next start"
t_ok "SIGHUP with a new min_version: a warning says it waits for a restart" \
	grep -q "min_version and max_version apply from the next start" "$T_TMP/s.err"
kill -TERM "$S_PID"
wait "$S_PID"
t_eq "SIGTERM: exit 0" 0 $?
S_PID=

# bad configurations: one line, exit 2, nothing started
bad() {
	printf '%s\n' "$2" >"$D/bad.yml"
	"$KSIGHT" serve --collectors syscalls --listen 127.0.0.1:0 --web.config.file "$D/bad.yml" -d 1 >/dev/null 2>"$T_TMP/bad.err"
	rc=$?
	t_eq "bad config ($1): exit 2, one line" "2 1" "$rc $(wc -l <"$T_TMP/bad.err")"
}
bad "unknown field" "tls_config: {}"
bad "not a bcrypt hash" "basic_auth_users: { a: plain }"
bad "missing key_file" "tls_server_config: { cert_file: cert.pem }"
bad "unreadable cert" "tls_server_config: { cert_file: nope.pem, key_file: key.pem }"
bad "not YAML" "basic_auth_users: [ a"
# settings that cannot be honoured are refused, never ignored
tls="tls_server_config: { cert_file: cert.pem, key_file: key.pem"
bad "mutual TLS (client_auth_type)" "$tls, client_auth_type: RequireAndVerifyClientCert }"
bad "mutual TLS (client_ca_file)" "$tls, client_ca_file: cert.pem }"
bad "cipher_suites" "$tls, cipher_suites: [ TLS_AES_128_GCM_SHA256 ] }"
bad "min_version unknown" "$tls, min_version: TLS9 }"
bad "min_version above max_version" "$tls, min_version: TLS13, max_version: TLS12 }"
bad "http_server_config headers" "http_server_config: { headers: { X-A: b } }"
bad "http_server_config http2: true" "http_server_config: { http2: true }"
# min_version is applied (TLS 1.3 only: a TLS 1.2 client is refused); NoClientCert and http2: false hold
printf '%s\n' "$tls, min_version: TLS13, client_auth_type: NoClientCert }" "http_server_config: { http2: false }" >"$D/v13.yml"
"$KSIGHT" serve --collectors syscalls --listen 127.0.0.1:0 --web.config.file "$D/v13.yml" 2>"$T_TMP/v13.err" &
S_PID=$!
if t_wait_for "$T_TMP/v13.err" "listening on"; then
	SP=$(sed -n 's|.*listening on https://127.0.0.1:\([0-9]*\)/metrics|\1|p' "$T_TMP/v13.err")
	t_eq "min_version TLS13: a TLS 1.3 client is answered" 200 "$(code --tlsv1.3 "https://127.0.0.1:$SP/metrics")"
	t_eq "min_version TLS13: a TLS 1.2 client is refused" 000 "$(code --tls-max 1.2 "https://127.0.0.1:$SP/metrics")"
else
	t_fail "serve with min_version TLS13 starts" "$(cat "$T_TMP/v13.err")"
fi
kill -TERM "$S_PID"
wait "$S_PID"
S_PID=
"$KSIGHT" serve --web.config.file "$D/none.yml" -d 1 >/dev/null 2>"$T_TMP/bad.err"
t_eq "missing config file: exit 2" 2 $?
exit $T_FAILED
