# Integration: a real serve's page under promtool and the strict OpenMetrics parser (UNIT lines, renamed families), ksight_build_info and sane process_* values.
. tests/lib.sh
need_root serve_names
for tool in promtool curl; do
	if ! command -v $tool >/dev/null 2>&1; then
		t_skip serve_names "no $tool"
		exit 0
	fi
done
# Debian's python3-prometheus-client (scripts/setup.sh); pyenv's python3 would shadow it
PY=/usr/bin/python3
if ! $PY -c 'import prometheus_client.openmetrics.parser' 2>/dev/null; then
	t_skip serve_names "no python3-prometheus-client"
	exit 0
fi
S_PID=
T_CLEANUP='[ -n "$S_PID" ] && kill -KILL $S_PID 2>/dev/null; wait 2>/dev/null'

t0=$(date +%s)
# --web.listen-address: the exporter-toolkit's name of --listen
"$KSIGHT" serve --collectors syscalls,offcpu --web.listen-address 127.0.0.1:0 -i 0.2 2>"$T_TMP/s.err" &
S_PID=$!
if ! t_wait_for "$T_TMP/s.err" "listening on"; then
	t_fail "serve --web.listen-address starts" "$(cat "$T_TMP/s.err")"
	exit 1
fi
URL=$(sed -n 's|.*listening on \(http://[^ ]*\)|\1|p' "$T_TMP/s.err")
# a period with offcpu rows (this shell's own waits give it some)
for _ in $(seq 1 40); do
	curl -s "$URL" >"$T_TMP/m.txt"
	grep -q '^ksight_offcpu_seconds_count' "$T_TMP/m.txt" && break
	sleep 0.25
done
t1=$(date +%s)
curl -s -H 'Accept: application/openmetrics-text; version=1.0.0' "$URL" >"$T_TMP/m.om"

promtool check metrics <"$T_TMP/m.txt" >"$T_TMP/promtool.out" 2>&1
t_eq "promtool check metrics: clean" "0 " "$? $(cat "$T_TMP/promtool.out")"
$PY - "$T_TMP/m.om" >"$T_TMP/om.out" 2>&1 <<'PYEOF'
import sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
fams = {f.name: f for f in text_string_to_metric_families(open(sys.argv[1]).read())}
for name in ("ksight_offcpu_seconds", "process_cpu_seconds", "process_start_time_seconds",
             "process_resident_memory_bytes", "process_virtual_memory_bytes", "process_open_fds",
             "process_max_fds", "ksight_build_info", "ksight_syscalls_latency_seconds"):
    f = fams[name]
    print(name, f.type, f.unit or "-")
print("units", sum(1 for f in fams.values() if f.unit))
print("repeats", sum(1 for n in fams if "offcpu_offcpu" in n or "syscalls_syscalls" in n))
PYEOF
t_eq "strict OpenMetrics parser: accepted" 0 $?
t_eq "OpenMetrics: the renamed histogram, UNIT seconds" "ksight_offcpu_seconds histogram seconds" \
	"$(grep '^ksight_offcpu_seconds ' "$T_TMP/om.out")"
t_eq "OpenMetrics: process_cpu_seconds counter, UNIT seconds" "process_cpu_seconds counter seconds" \
	"$(grep '^process_cpu_seconds ' "$T_TMP/om.out")"
t_eq "OpenMetrics: process_resident_memory_bytes, UNIT bytes" "process_resident_memory_bytes gauge bytes" \
	"$(grep '^process_resident_memory_bytes ' "$T_TMP/om.out")"
t_eq "OpenMetrics: process_open_fds has no unit" "process_open_fds gauge -" "$(grep '^process_open_fds ' "$T_TMP/om.out")"
t_eq "OpenMetrics: ksight_build_info gauge" "ksight_build_info gauge -" "$(grep '^ksight_build_info ' "$T_TMP/om.out")"
t_eq "no family repeats its collector" "repeats 0" "$(grep '^repeats' "$T_TMP/om.out")"

val() { sed -n "s/^$1 //p" "$T_TMP/m.txt"; }
t_ok "process_open_fds > 3 ($(val process_open_fds))" test "$(val process_open_fds)" -gt 3
t_ok "process_max_fds = the soft limit" test "$(val process_max_fds)" = "$(sed -n 's/^Max open files *\([0-9]*\).*/\1/p' /proc/$S_PID/limits)"
t_ok "process_start_time_seconds within the test's window ($t0 .. $t1)" awk -v s="$(val process_start_time_seconds)" -v a=$t0 -v b=$t1 'BEGIN { exit !(s >= a - 1 && s <= b + 1) }'
t_ok "process_cpu_seconds_total > 0 ($(val process_cpu_seconds_total))" awk -v s="$(val process_cpu_seconds_total)" 'BEGIN { exit !(s > 0) }'
t_ok "process_resident_memory_bytes within a factor 2 of VmRSS" awk -v s="$(val process_resident_memory_bytes)" -v k="$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\).*/\1/p' /proc/$S_PID/status)" 'BEGIN { exit !(s > 1e6 && s < 2 * k * 1024 && s > k * 1024 / 2) }'
t_ok "process_virtual_memory_bytes >= resident" awk -v v="$(val process_virtual_memory_bytes)" -v r="$(val process_resident_memory_bytes)" 'BEGIN { exit !(v >= r) }'
t_ok "ksight_build_info: version, revision, kernel, libbpf" grep -q "^ksight_build_info{version=\"$("$KSIGHT" version | cut -d' ' -f2)\",revision=\"\([0-9a-f]\{12\}\|unknown\)\",kernel=\"$(uname -r)\",libbpf=\"v1\.[0-9]*\"} 1$" "$T_TMP/m.txt"
kill -TERM "$S_PID"
wait "$S_PID"
t_eq "SIGTERM: exit 0" 0 $?
S_PID=
exit $T_FAILED
