# Integration: processes, a cgroup and pods named with invalid UTF-8, quotes, backslashes, newlines and braces, while a real Prometheus scrapes serve in text, OpenMetrics and protobuf: up stays 1, promtool and the OpenMetrics parser read every page; the rows leave after --series-ttl.
. tests/lib.sh
need_root serve-hostile
for tool in prometheus promtool curl jq python3; do
	if ! command -v $tool >/dev/null 2>&1; then
		t_skip serve-hostile "no $tool"
		exit 0
	fi
done
# Debian's python3-prometheus-client, also when another python3 comes first in PATH
OMPY=
for py in python3 /usr/bin/python3; do
	if $py -c 'import prometheus_client.openmetrics.parser' 2>/dev/null; then
		OMPY=$py
		break
	fi
done
if [ -z "$OMPY" ]; then
	t_skip serve-hostile "no python3 prometheus_client (python3-prometheus-client)"
	exit 0
fi
cg2=$(awk '$3=="cgroup2" {print $2; exit}' /proc/mounts)
if [ -z "$cg2" ]; then
	t_skip serve-hostile "no cgroup v2 mount"
	exit 0
fi
ROUNDS=1000000 PAGES=4 TTL=3 # runs until the second SIGUSR1

# a pod's cgroup in the systemd driver's layout whose scope, namespace, pod and container names are hostile
UID_=$(cat /proc/sys/kernel/random/uuid)
UIDU=$(echo "$UID_" | tr - _)
top=$cg2/ksight-hostile-$$
slice=$top/kubepods-x-pod$UIDU.slice
cg=$slice/$(printf 'sc\377"o\\pe}')  # the kernel refuses a newline here
PODS=$T_TMP/pods
pod=$PODS/$(printf 'ns\377"\\x_po\nd}{_')$UID_
mkdir -p "$cg" "$pod/$(printf 'con\377"tainer}')"
S_PID= P_PID= G_PID=
T_CLEANUP='for p in $S_PID $P_PID $G_PID; do kill -KILL $p 2>/dev/null; done; wait 2>/dev/null; rmdir "$cg" "$slice" "$top" 2>/dev/null'

"$WORKLOADS/hostile_names" $ROUNDS $PAGES >"$T_TMP/hn.out" &
G_PID=$!
t_wait_for "$T_TMP/hn.out" '^[0-9]'
echo "$G_PID" >"$cg/cgroup.procs"

# every key kind: comm (mem, runqlat), cgroup with pod labels (syscalls), pid (offcpu)
"$KSIGHT" serve --collectors mem,syscalls,offcpu,runqlat --by syscalls=cgroup,syscall --by offcpu=pid \
	--by runqlat=comm -c "$cg" --pods-dir "$PODS" --series-ttl $TTL -i 0.5 --listen 127.0.0.1:0 \
	2>"$T_TMP/s.err" &
S_PID=$!
if ! t_wait_for "$T_TMP/s.err" "listening on"; then
	t_fail "serve starts" "$(cat "$T_TMP/s.err")"
	exit 1
fi
SP=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\)/metrics|\1|p' "$T_TMP/s.err")
URL=http://127.0.0.1:$SP

# one Prometheus, a job per format (protobuf parsed as native histograms need the feature)
PP=$(t_free_port)
cat >"$T_TMP/prom.yml" <<EOT
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
EOT
for f in text openmetrics protobuf; do
	printf '  - job_name: %s\n    params: { format: [%s] }\n    static_configs: [{ targets: [127.0.0.1:%s] }]\n' \
		$f $f "$SP" >>"$T_TMP/prom.yml"
done
prometheus --config.file="$T_TMP/prom.yml" --storage.tsdb.path="$T_TMP/tsdb" --web.listen-address=127.0.0.1:$PP \
	--enable-feature=native-histograms >"$T_TMP/prom.log" 2>&1 &
P_PID=$!

q() { t_promq "$1"; }
poll() { t_prompoll "$@"; }

t_eq "before the names: every job up" 3 "$(poll 'sum(up)' 3)"
kill -USR1 "$G_PID"

# the hostile rows reach Prometheus through every format (PromQL reads \\ as one backslash)
t_eq "comm with an invalid byte, in all three jobs" 3 \
	"$(poll 'count(ksight_mem_faults_user_total{comm="bad\\xffname"})' 3)"
t_eq "15-byte comm cut inside a 4-byte character" 3 \
	"$(poll 'count(ksight_mem_faults_user_total{comm="🔥🔥🔥\\xf0\\x9f\\x94"})' 3)"
t_eq "comm with a newline, quote, backslash and braces" 3 \
	"$(poll 'count(ksight_mem_faults_user_total{comm=~"new\\\\x0aline|q\"uote|back\\\\\\\\slash|br}a\\{ce=,"}) / 4' 3)"
t_eq "runqlat by comm: the valid 4-byte name kept" 3 "$(poll 'count(ksight_runqlat_waits_total{comm="fire🔥"})' 3)"
t_eq "syscalls: cgroup, k8s_namespace_name, k8s_pod_name and k8s_container_name labels" 3 \
	"$(poll 'count(ksight_syscalls_calls_total{syscall="getppid",k8s_namespace_name="ns\\xff\"\\\\x",k8s_pod_name="po\\x0ad}{",k8s_container_name="con\\xff\"tainer}"})' 3)"
t_eq "syscalls: the cgroup's path" 3 "$(poll 'count(ksight_syscalls_calls_total{syscall="getppid",cgroup=~".*/sc\\\\xff\"o\\\\\\\\pe}"})' 3)"
t_eq "offcpu by pid" 3 "$(poll 'count(count by (job) (ksight_offcpu_blocks_total{pid!="other"}))' 3)"

# the pages themselves while the names are there: valid UTF-8, promtool lints clean, the strict OpenMetrics parser
curl -s "$URL/metrics?format=text" >"$T_TMP/m.txt"
curl -s "$URL/metrics?format=openmetrics" >"$T_TMP/m.om"
t_ok "text page holds the escaped name" grep -q 'comm="bad\\\\xffname"' "$T_TMP/m.txt"
promtool check metrics <"$T_TMP/m.txt" >"$T_TMP/promtool.out" 2>&1
t_eq "promtool check metrics: clean" "0 " "$? $(cat "$T_TMP/promtool.out")"
t_eq "OpenMetrics: strict parser, hostile labels read back" "ok" "$($OMPY - "$T_TMP/m.om" 2>&1 <<'EOF'
import sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
text = open(sys.argv[1], 'rb').read().decode('utf-8')  # strict: raises on invalid UTF-8
values = set()
for fam in text_string_to_metric_families(text):
    for s in fam.samples:
        values.update(s.labels.values())
want = ['bad\\xffname', 'new\\x0aline', 'q"uote', 'back\\\\slash', 'br}a{ce=,', 'fire\U0001f525',
        '\U0001f525' * 3 + '\\xf0\\x9f\\x94', 'po\\x0ad}{', 'con\\xff"tainer}']
missing = [w for w in want if w not in values]
print('ok' if not missing else 'missing %r' % missing)
EOF
)"
t_ok "text page: valid UTF-8" python3 -c 'import sys; open(sys.argv[1], "rb").read().decode("utf-8")' "$T_TMP/m.txt"

# three more scrapes of each job with the names in: none failed
base=$(q 'sum(count_over_time(up[5m]))')
t_eq "three more scrapes per job" 1 "$(poll "sum(count_over_time(up[5m])) >= bool $((${base:-0} + 9))" 1)"
t_eq "up never 0 in any job" 1 "$(q 'min(min_over_time(up[5m]))')"
# the old code: "down invalid UTF-8 label value" (text, OpenMetrics), "down invalid label value" (protobuf)
t_eq "every target healthy, no scrape error" "openmetrics:up: protobuf:up: text:up:" "$(curl -s --max-time 5 \
	"http://127.0.0.1:$PP/api/v1/targets" | jq -r '[.data.activeTargets[] | "\(.labels.job):\(.health):\(.lastError)"] | sort | join(" ")')"
t_eq "each format scraped" 3 "$(q 'count(increase(ksight_scrapes_total{job="text"}[5m]) > 0)')"

# the other outputs of the same names: JSON and text tables
"$KSIGHT" mem --by comm -c "$cg" -d 1 -n 0 -j >"$T_TMP/mem.json" 2>"$T_TMP/mem.err"
t_ok "mem -j: strict UTF-8 JSON with the escaped name" python3 -c '
import json, sys
d = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))
assert any(r.get("comm") == "bad\\xffname" for r in d["rows"]), d["rows"][:3]' "$T_TMP/mem.json"
"$KSIGHT" mem --by comm -c "$cg" -d 1 -n 0 >"$T_TMP/mem.txt" 2>&1
t_ok "mem text table: UTF-8, no control bytes" python3 -c '
import sys
t = open(sys.argv[1], "rb").read().decode("utf-8")
assert all(c == "\n" or (c >= " " and c != "\x7f") for c in t) and "bad\\xffname" in t' "$T_TMP/mem.txt"

# recorded events of the same names: ftrace-style text, CSV, JSON lines, trace-event JSON
"$KSIGHT" record -e sched:sched_switch -c "$cg" -d 1 -o "$T_TMP/r.ksr" 2>"$T_TMP/r.err"
"$KSIGHT" report "$T_TMP/r.ksr" >"$T_TMP/r.txt"
"$KSIGHT" report --csv "$T_TMP/r.ksr" >"$T_TMP/r.csv"
"$KSIGHT" report -j --perfetto "$T_TMP/r.trace.json" "$T_TMP/r.ksr" >"$T_TMP/r.jsonl"
for f in r.txt r.csv r.jsonl r.trace.json; do
	t_ok "record, report $f: UTF-8, no control bytes, the escaped name" python3 -c '
import sys
t = open(sys.argv[1], "rb").read().decode("utf-8")
assert all(c == "\n" or (c >= " " and c != "\x7f") for c in t)
assert "bad\\xffname" in t or "bad\\\\xffname" in t  # as is, or in JSON' "$T_TMP/$f"
done

# profiles of the same names: folded stacks, SVG, pprof (comm is the root frame)
"$KSIGHT" profile -c "$cg" -F 999 -d 1 --svg "$T_TMP/p.svg" --pprof "$T_TMP/p.pb.gz" -o "$T_TMP/p.folded" 2>"$T_TMP/p.err"
if command -v go >/dev/null 2>&1; then
	go tool pprof -raw "$T_TMP/p.pb.gz" >"$T_TMP/p.raw" 2>"$T_TMP/p.goerr"
	t_eq "go tool pprof reads the profile" 0 $?
else
	cp "$T_TMP/p.folded" "$T_TMP/p.raw"
fi
for f in p.folded p.svg p.raw; do
	t_ok "profile $f: UTF-8, no control bytes, escaped names" python3 -c '
import sys
t = open(sys.argv[1], "rb").read().decode("utf-8")
assert all(c == "\n" or (c >= " " and c != "\x7f") for c in t)
assert "\\x" in t' "$T_TMP/$f"
done

# the workload ends: after the TTL every row of its processes, pid and cgroup leaves, in each collector
kill -USR1 "$G_PID"
t_wait_for "$T_TMP/hn.out" done
t_eq "workload ran cleanly" "done 0" "$(tail -1 "$T_TMP/hn.out" | cut -d' ' -f1-2)"
wait "$G_PID"
G_PID=
start=$(date +%s%N)
end=$(($(date +%s) + TTL + 10))
while :; do
	curl -s "$URL/metrics?format=text" >"$T_TMP/after.txt"
	left=$(grep -c '^ksight_\(mem\|syscalls\|offcpu\|runqlat\)_[a-z_]*{' "$T_TMP/after.txt")
	[ "$left" -eq 0 ] || [ "$(date +%s)" -ge $end ] && break
	sleep 0.25
done
t_eq "rows gone ${TTL}s after the processes exited ($((($(date +%s%N) - start) / 1000000)) ms)" 0 "$left"
for c in mem syscalls offcpu runqlat; do
	n=$(awk -v c="$c" '$1 == "ksight_expired_rows_total{collector=\"" c "\"}" { print $2 }' "$T_TMP/after.txt")
	t_ok "$c: expired rows counted ($n)" test "${n:-0}" -gt 0
done
t_eq "after the exit: every job still up" 3 "$(poll 'sum(up)' 3)"

kill -TERM "$S_PID"
wait "$S_PID"
t_eq "serve: SIGTERM exit 0" 0 $?
S_PID=
exit $T_FAILED
