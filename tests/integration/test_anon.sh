# Integration: --anonymize (record and report): comm, paths, user names and IP addresses become stable keyed tokens; the same input gives the same token in a file.
. tests/lib.sh
need_root anon

SECRET=ksecretdir$$
NAME=ksanonwl$$
mkdir -p "$T_TMP/$SECRET"
cp "$WORKLOADS/sleeper" "$T_TMP/$SECRET/$NAME"
WL=$T_TMP/$SECRET/$NAME
CN=$(printf %.15s "$NAME") # the comm: the name cut to 15

# runs the workload (exec of a secret path, comm NAME, a few sleeps); sets G_PID
run_wl() {
	g_start "$T_TMP/wl.$1" "$WL" -k 5 -m 5
	kill -USR1 "$G_PID"
	t_wait_for "$G_FILE" "^done"
	kill -USR1 "$G_PID"
	wait "$G_PID"
}

# 1. record --anonymize: nothing of the name, the path or the host in the file
k_start record -e sched:sched_process_exec -e sched:sched_switch --anonymize -o "$T_TMP/a.ksr"
run_wl 1
P1=$G_PID
run_wl 2
P2=$G_PID
k_stop
t_eq "record --anonymize: exit 0" "0" "$?"
t_eq "record --anonymize: the file has no trace of the comm, the path or the host" "0 0 0" \
	"$(grep -ac "$CN" "$T_TMP/a.ksr") $(grep -ac "$SECRET" "$T_TMP/a.ksr") $(grep -ac "host	$(uname -n)\$" "$T_TMP/a.ksr")"
"$KSIGHT" report -j "$T_TMP/a.ksr" >"$T_TMP/a.jsonl"
t_eq "record --anonymize: nor has its report" "0 0" "$(grep -c "$CN" "$T_TMP/a.jsonl") $(grep -c "$SECRET" "$T_TMP/a.jsonl")"
t_eq "record --anonymize: the manifest says so, host is a token" "yes true" \
	"$("$KSIGHT" info -j "$T_TMP/a.ksr" | jq -r '"\(.manifest.anonymized) \(.manifest.host | startswith("host-"))"')"
# the two execs of the same path: one path token; the workload's comm: one token everywhere
jq -s "map(select(.event == \"sched:sched_process_exec\" and (.pid == $P1 or .pid == $P2)))" "$T_TMP/a.jsonl" >"$T_TMP/exec.json"
t_eq "exec events of both runs" "2" "$(jq length "$T_TMP/exec.json")"
t_eq "same path, same token (a path- token)" "1 true" \
	"$(jq -r '"\(map(.fields.filename) | unique | length) \(.[0].fields.filename | test("^path-[0-9a-f]{16}$"))"' "$T_TMP/exec.json")"
tok=$(jq -r '.[0].comm' "$T_TMP/exec.json")
t_ok "the comm is a token ($tok)" expr "$tok" : 'c-[0-9a-f]\{12\}$'
# after its exec (before it, the process was the shell that forked it)
after="(.ts_ns > $(jq '[.[].ts_ns] | max' "$T_TMP/exec.json"))"
w1="(.pid == $P1 and .ts_ns >= $(jq ".[] | select(.pid == $P1) | .ts_ns" "$T_TMP/exec.json"))"
t_eq "same comm, same token: header comm after exec, prev_comm and next_comm of both runs" "[\"$tok\"]" \
	"$(jq -sc "[.[] | select($w1 or (.pid == $P2 and $after)) | .comm] + [.[] | select(.event == \"sched:sched_switch\" and $after) | (select(.fields.prev_pid == $P2) | .fields.prev_comm), (select(.fields.next_pid == $P2) | .fields.next_comm)] | unique" "$T_TMP/a.jsonl")"
t_ok "the workload's switches are there ($(jq -s "map(select(.fields.prev_pid == $P1)) | length" "$T_TMP/a.jsonl"))" \
	[ "$(jq -s "map(select(.fields.prev_pid == $P1)) | length" "$T_TMP/a.jsonl")" -ge 5 ]
t_eq "other comms differ from it (not one token for all)" "true" \
	"$(jq -s 'map(.comm) | unique | length > 2' "$T_TMP/a.jsonl")"

# 2. report --anonymize of a plain recording: same key -> same tokens; another key -> others
k_start record -e sched:sched_process_exec -e sched:sched_switch -o "$T_TMP/p.ksr"
run_wl 3
P3=$G_PID
k_stop
t_eq "plain recording: the comm is there in clear" "true" \
	"$("$KSIGHT" report -j "$T_TMP/p.ksr" | jq -s "any(.comm == \"$CN\")")"
"$KSIGHT" report -j --anonymize-key k1 "$T_TMP/p.ksr" >"$T_TMP/r1.jsonl"
"$KSIGHT" report -j --anonymize-key k1 "$T_TMP/p.ksr" >"$T_TMP/r1b.jsonl"
"$KSIGHT" report -j --anonymize-key k2 "$T_TMP/p.ksr" >"$T_TMP/r2.jsonl"
t_eq "report --anonymize-key: nothing of the comm or the path" "0 0" "$(grep -c "$CN" "$T_TMP/r1.jsonl") $(grep -c "$SECRET" "$T_TMP/r1.jsonl")"
t_eq "report --anonymize-key: the same key gives the same output" "$(md5sum <"$T_TMP/r1.jsonl")" "$(md5sum <"$T_TMP/r1b.jsonl")"
c1=$(jq -rs "map(select(.pid == $P3 and .event == \"sched:sched_process_exec\"))[0].comm" "$T_TMP/r1.jsonl")
c2=$(jq -rs "map(select(.pid == $P3 and .event == \"sched:sched_process_exec\"))[0].comm" "$T_TMP/r2.jsonl")
t_ok "report: another key, another token ($c1 / $c2)" [ "$c1" != "$c2" -a -n "$c1" ]
t_eq "report: events and fields otherwise unchanged" \
	"$("$KSIGHT" report -j "$T_TMP/p.ksr" | jq -c '[.ts_ns, .pid, .fields.prev_pid, .fields.next_pid]' | md5sum)" \
	"$(jq -c '[.ts_ns, .pid, .fields.prev_pid, .fields.next_pid]' "$T_TMP/r1.jsonl" | md5sum)"
"$KSIGHT" report --anonymize "$T_TMP/p.ksr" >"$T_TMP/r.txt"
t_eq "report --anonymize text: no comm" "0" "$(grep -c "$CN" "$T_TMP/r.txt")"
# record and report share the token function: one key, one token for one comm
k_start record -e sched:sched_process_exec --anonymize-key k1 -o "$T_TMP/k.ksr"
run_wl 4
P4=$G_PID
k_stop
t_eq "record and report with one key: the same token for the same comm" "$c1" \
	"$("$KSIGHT" report -j "$T_TMP/k.ksr" | jq -rs "map(select(.pid == $P4))[0].comm")"

# 3. the manifest's --filter/--trigger strings: the tokens the events give, so the anonymized
# filter still selects the anonymized events; a --trigger-latency spec kept, so rerun works
k_start record -e sched:sched_process_exec -e sched:sched_switch --anonymize-key k1 --filter "comm == \"$CN\"" \
	-o "$T_TMP/f.ksr"
run_wl 5
k_stop
t_eq "record --anonymize --filter: no trace of the filter's string" "0" "$(grep -ac "$CN" "$T_TMP/f.ksr")"
ff=$("$KSIGHT" info -j "$T_TMP/f.ksr" | jq -r '.manifest.filter')
t_eq "the manifest's filter holds the events' comm token" "comm == \"$c1\"" "$ff"
nall=$("$KSIGHT" report -j "$T_TMP/f.ksr" | wc -l)
t_eq "the anonymized filter keeps every anonymized event ($nall)" "$nall" \
	"$("$KSIGHT" report -j --filter "$ff" "$T_TMP/f.ksr" | wc -l)"
"$KSIGHT" record -e sched:sched_switch --filter "comm != \"$SECRET\"" --flight 1M --trigger "prev_comm == \"$SECRET\"" \
	--trigger-latency 'sched:sched_wakeup/sched:sched_switch pid=next_pid>1s' --anonymize -d 0.3 -o "$T_TMP/t.ksr" \
	2>"$T_TMP/t.err"
t_eq "record --anonymize --flight --trigger --trigger-latency: exit 0" "0" "$?"
t_eq "no trace of the --filter and --trigger strings anywhere in the file" "0" "$(grep -ac "$SECRET" "$T_TMP/t.ksr")"
"$KSIGHT" rerun "$T_TMP/t.ksr" -o "$T_TMP/t2.ksr" 2>"$T_TMP/t2.err"
t_eq "rerun of that anonymized recording: exit 0" "0" "$?"
t_eq "rerun: the same trigger latency spec" "sched:sched_wakeup/sched:sched_switch pid=next_pid>1s" \
	"$("$KSIGHT" info -j "$T_TMP/t2.ksr" | jq -r '.manifest."flight.trigger_latency"')"

# 4. IP addresses: a TCP connection over loopback, its states recorded
if [ -d /sys/kernel/tracing/events/sock/inet_sock_set_state ] || "$KSIGHT" list 'sock:inet_sock_set_state' 2>/dev/null | grep -q inet_sock; then
	# Only this connection's events: a system-wide recording also catches other processes'
	# connections (other addresses, other tokens).  The filter is on the listening port, not the
	# pid: the peer's state changes run in softirq context, on whatever task the CPU was running.
	# The listener binds first, says its port, and connects once the line on its stdin comes.
	mkfifo "$T_TMP/go"
	python3 -c '
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
print(s.getsockname()[1], flush=True)
sys.stdin.readline()
c = socket.create_connection(s.getsockname()); a, _ = s.accept(); c.close(); a.close(); s.close()' \
		<"$T_TMP/go" >"$T_TMP/port" &
	py=$!
	exec 3>"$T_TMP/go"
	t_wait_for "$T_TMP/port" "^[0-9]"
	port=$(cat "$T_TMP/port")
	k_start record -e sock:inet_sock_set_state --anonymize --filter "sport == $port || dport == $port" -o "$T_TMP/n.ksr"
	echo >&3
	exec 3>&-
	wait $py
	k_stop
	"$KSIGHT" report -j "$T_TMP/n.ksr" >"$T_TMP/n.jsonl"
	t_ok "ip: state changes recorded ($(wc -l <"$T_TMP/n.jsonl"))" [ "$(wc -l <"$T_TMP/n.jsonl")" -ge 4 ]
	t_eq "ip: only this connection's events (port $port at one end)" "0" \
		"$(jq -s --argjson p "$port" 'map(select(.fields.sport != $p and .fields.dport != $p)) | length' "$T_TMP/n.jsonl")"
	t_eq "ip: no 127.0.0.1 left in saddr/daddr (nor in the v4-mapped v6 ones)" "0 0" \
		"$(jq -rs '"\(map(select(.fields.saddr == [127,0,0,1] or .fields.daddr == [127,0,0,1])) | length) \(map(select(.fields.saddr_v6[10:] == [255,255,127,0,0,1])) | length)"' "$T_TMP/n.jsonl")"
	# the established connection: both ends 127.0.0.1, so one token, in 10.0.0.0/8
	t_eq "ip: one token for 127.0.0.1 on both ends, in 10.0.0.0/8" "1 true" \
		"$(jq -rs '[.[] | select(.fields.family == 2 and .fields.newstate == 1) | .fields.saddr, .fields.daddr] | unique | "\(length) \(.[0][0] == 10)"' "$T_TMP/n.jsonl")"
	t_eq "ip: ports kept (not identifying)" "true" "$(jq -s 'any(.fields.sport > 0)' "$T_TMP/n.jsonl")"
else
	t_skip "ip" "no sock:inet_sock_set_state tracepoint"
fi
t_no_leaks ks_record
