# Integration: `ksight serve` /debug/pprof/profile?seconds=N read by `go tool pprof -top URL`: the workload's hot function, one profile at a time, bounds.
. tests/lib.sh
need_root serve_pprof
for tool in curl go; do
	if ! command -v $tool >/dev/null 2>&1; then
		t_skip serve_pprof "no $tool (scripts/setup.sh installs golang-go)"
		exit 0
	fi
done
export HOME=${HOME:-/root}
before=$T_TMP/orphans.before
t_orphans >"$before"
S_PID= Q_PID= B_PID=
T_CLEANUP='kill -KILL $S_PID $Q_PID $B_PID 2>/dev/null; wait 2>/dev/null'

# start_serve LOG [ARGS]: sets S_PID and URL
start_serve() {
	_log=$1; shift
	"$KSIGHT" serve --collectors syscalls --listen 127.0.0.1:0 "$@" >/dev/null 2>"$_log" &
	S_PID=$!
	if ! t_wait_for "$_log" "listening on"; then
		t_fail "serve starts" "$(cat "$_log")"
		exit 1
	fi
	URL=$(sed -n 's|.*listening on \(http://[^ ]*\)/metrics|\1|p' "$_log")
}
code() { curl -s -o /dev/null -w '%{http_code}' --max-time "${2:-10}" "$1"; }

start_serve "$T_TMP/s.err"
P=$URL/debug/pprof/profile
t_eq "seconds=0: 400" 400 "$(code "$P?seconds=0")"
t_eq "seconds=121: 400 (at most 120)" 400 "$(code "$P?seconds=121")"
t_eq "seconds=abc: 400" 400 "$(code "$P?seconds=abc")"

# prof_qsort spins in hot_spin (under libc's qsort) for 8 s
"$WORKLOADS/prof_qsort" 8 >"$T_TMP/q.out" &
Q_PID=$!
t_wait_for "$T_TMP/q.out" ready
go tool pprof -top "$P?seconds=3" >"$T_TMP/top.txt" 2>"$T_TMP/top.err" &
B_PID=$!
# while it samples: a second profile is refused, scrapes go on
sleep 1
t_eq "a second profile while one runs: 429" 429 "$(code "$P?seconds=1")"
t_eq "a scrape while a profile runs: 200 within 1 s" 200 "$(code "$URL/metrics" 1)"
wait $B_PID
t_eq "go tool pprof -top URL: exit 0" "0" "$?"
B_PID=
# hot_spin's flat time: about a third of the 3 s on this loaded 2-CPU machine; at least 0.3 s
hot=$(awk '$NF == "hot_spin" { v = $1; sub(/s$/, "", v); if ($1 ~ /ms$/) { sub(/ms$/, "", v); v /= 1000 } print v; exit }' "$T_TMP/top.txt")
t_ok "pprof lists the workload's hot_spin with >= 0.3 s flat (got ${hot:-none})" \
	awk -v v="${hot:-0}" 'BEGIN { exit !(v >= 0.3) }'
t_ok "pprof: the profile is a CPU profile" grep -q "^Type: cpu" "$T_TMP/top.txt"
# the profile go tool pprof saved: by address, as --pprof writes it (mappings with build IDs, pid/tid labels)
saved=$(sed -n 's/^Saved profile in //p' "$T_TMP/top.err")
go tool pprof -raw "$saved" >"$T_TMP/raw.txt" 2>/dev/null
t_ok "pprof: prof_qsort's mapping with its build ID" \
	grep -Eq "^[0-9]+: 0x[0-9a-f]+/0x[0-9a-f]+/0x[0-9a-f]+ [^ ]*/prof_qsort [0-9a-f]{40} " "$T_TMP/raw.txt"
t_ok "pprof: samples labelled pid:[$Q_PID] with a tid" grep -q "pid:\[$Q_PID\] tid:\[[0-9]*\]" "$T_TMP/raw.txt"
rm -f "$saved"
wait $Q_PID
Q_PID=

# a client that gives up does not wedge the endpoint: the next profile is served once its run ends
code "$P?seconds=2" 0.5 >/dev/null
got=
for _ in $(seq 1 40); do
	got=$(code "$P?seconds=1")
	[ "$got" = 200 ] && break
	sleep 0.25
done
t_eq "after an aborted profile: the next one is served" 200 "$got"

# SIGTERM during a profile: the profile ends early and serve exits 0 promptly
curl -s -o /dev/null --max-time 30 "$P?seconds=20" &
B_PID=$!
sleep 1.5
t0=$(date +%s)
kill -TERM "$S_PID"
wait "$S_PID"
t_eq "SIGTERM during a profile: exit 0" 0 $?
t_ok "SIGTERM during a 20 s profile: stopped within 8 s" test $(($(date +%s) - t0)) -le 8
S_PID=
wait $B_PID 2>/dev/null
B_PID=

# --drop-caps: no BPF can be loaded any more; said so with 503
start_serve "$T_TMP/dc.err" --drop-caps
P=$URL/debug/pprof/profile
t_eq "--drop-caps: profile 503" 503 "$(code "$P?seconds=1")"
kill -TERM "$S_PID"
wait "$S_PID"
S_PID=
t_no_leaks "serve pprof: nothing left attached" "$before"
exit $T_FAILED
