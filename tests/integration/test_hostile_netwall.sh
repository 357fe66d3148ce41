# Integration: a task named with invalid UTF-8, a control character, a quote and a backslash through `net --by comm` and `wall --by comm` (text, JSON), serve's /metrics (promtool) and record --collect + report --html: escaped once, the same way everywhere.
. tests/lib.sh
need_root hostile_netwall
for tool in promtool curl python3; do
	command -v $tool >/dev/null 2>&1 || { t_skip "hostile net and wall names" "no $tool"; exit 0; }
done
S_PID=
T_CLEANUP='[ -n "$S_PID" ] && kill -KILL $S_PID 2>/dev/null; wait 2>/dev/null'

# the task: a copy of netudp named h 0xff " q \ b ESC e (its comm), sending N datagrams over
# loopback to a copy of itself that sleeps 2 ms before each read
NAME=$(printf 'h\377"q\\b\033e')
# as the sanitizer writes it (docs/names.md): \xff, \\ and \x1b, the quote kept
ESC='h\xff"q\\b\x1be'
N=20
cp "$WORKLOADS/netudp" "$T_TMP/$NAME"
PORT=$((20000 + $$ % 20000))
cat >"$T_TMP/run.sh" <<'EOF'
cd "$(dirname "$0")"
: >recv.out
"./$1" recv 127.0.0.1 "$2" "$3" -s 2000 >recv.out &
until grep -q ready recv.out; do sleep 0.05; done
"./$1" send 127.0.0.1 "$2" "$3" 100 >/dev/null
wait
EOF
run() { PORT=$((PORT + 1)); sh "$T_TMP/run.sh" "$NAME" $PORT $N; }

is_utf8() { python3 -c 'import sys; open(sys.argv[1], "rb").read().decode("utf-8")' "$1" 2>/dev/null; }
json_ok() { python3 -c 'import json, sys; json.loads(open(sys.argv[1], "rb").read())' "$1" 2>/dev/null; }
# clean FILE: valid UTF-8 with no raw ESC byte in it
clean() { is_utf8 "$1" && ! grep -q "$(printf '\033')" "$1"; }

# 1. net and wall by comm, text and JSON
for c in net wall; do
	PORT=$((PORT + 1))
	"$KSIGHT" $c --by comm -j -- sh "$T_TMP/run.sh" "$NAME" $PORT $N >"$T_TMP/$c.json" 2>"$T_TMP/$c.err"
	t_eq "$c --by comm -j: exit 0" 0 $?
	t_ok "$c -j: JSON (python json.loads)" json_ok "$T_TMP/$c.json"
	t_eq "$c -j: a row of the task, its comm escaped" true "$(jq --arg e "$ESC" '[.rows[] | select(.comm == $e)] | length > 0' "$T_TMP/$c.json")"
	PORT=$((PORT + 1))
	"$KSIGHT" $c --by comm -- sh "$T_TMP/run.sh" "$NAME" $PORT $N >"$T_TMP/$c.txt" 2>"$T_TMP/$c.err"
	t_eq "$c --by comm (text): exit 0" 0 $?
	t_ok "$c text: valid UTF-8, no raw control byte" clean "$T_TMP/$c.txt"
	t_ok "$c text: the row names the task escaped" grep -qF "$ESC " "$T_TMP/$c.txt"
done
t_eq "net -j: the task's $N sends and $N reads" "$N $N" \
	"$(jq -r --arg e "$ESC" '[([.rows[] | select(.comm == $e and .stage == "send") | .packets] | add), ([.rows[] | select(.comm == $e and .stage == "read") | .packets] | add)] | map(. // 0) | join(" ")' "$T_TMP/net.json")"

# 2. serve: the page with the task's series passes promtool
t_serve_start "$T_TMP/serve.err" "" "serve with net and wall by comm starts" --collectors net,wall --by net=comm --by wall=comm -i 0.2
run
PROMESC='h\\xff\"q\\\\b\\x1be'
for _ in $(seq 1 40); do
	t_get "$URL" >"$T_TMP/m.txt"
	grep -qF "ksight_net_packets_total{stage=\"read\",comm=\"$PROMESC\"} $N" "$T_TMP/m.txt" && break
	sleep 0.25
done
t_ok "serve: the task's reads under its escaped comm label" grep -qF "ksight_net_packets_total{stage=\"read\",comm=\"$PROMESC\"} $N" "$T_TMP/m.txt"
t_ok "serve: wall's series of the task" grep -qF "ksight_wall_time_seconds_total{comm=\"$PROMESC\"}" "$T_TMP/m.txt"
promtool check metrics <"$T_TMP/m.txt" >"$T_TMP/promtool.out" 2>&1
t_eq "serve: promtool check metrics: clean" "0 " "$? $(cat "$T_TMP/promtool.out")"
kill -TERM $S_PID
wait $S_PID
S_PID=

# 3. record --collect, then report --html: the name escaped once (the recording's JSON holds it
# escaped; the page escaped it again: h\\xff&quot;q\\\\b\\x1be)
PORT=$((PORT + 1))
"$KSIGHT" record --collect net,wall -i 0.5 -o "$T_TMP/r.ksr" -- sh "$T_TMP/run.sh" "$NAME" $PORT $N 2>"$T_TMP/rec.err"
t_eq "record --collect net,wall: exit 0" 0 $?
"$KSIGHT" report --html "$T_TMP/r.html" "$T_TMP/r.ksr" 2>"$T_TMP/html.err"
t_eq "report --html: exit 0" 0 $?
t_ok "report --html: valid UTF-8, no raw control byte" clean "$T_TMP/r.html"
t_ok "report --html: wall's rows name the task escaped once" grep -qF '<td class="k">h\xff&quot;q\\b\x1be</td>' "$T_TMP/r.html"
t_eq "report --html: no key escaped twice" 0 "$(grep -cF 'h\\xff' "$T_TMP/r.html")"
[ "$T_FAILED" = 0 ]
