# Integration: --anonymize hashes kernel pointers (skbaddr, location, ptr, call_site): none reaches the output, the same pointer gives the same token, so pairs by pointer still match.
. tests/lib.sh
need_root anon_ptr

# N datagrams on lo: each an skb queued and sent (net_dev_queue, net_dev_xmit with one skbaddr)
N=20
send_udp() {
	python3 -c "
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range($N): s.sendto(b'x', ('127.0.0.1', 9))
"
}
EV="-e net:net_dev_queue -e net:net_dev_xmit -e skb:consume_skb -e kmem:kfree"
PAIR="--pair net:net_dev_queue/net:net_dev_xmit --key skbaddr"
# the pointer fields of these events, from -j; the kernel half starts at 0xffff800000000000
PTRS='select(.event != null) | .fields | (.skbaddr, .location, .ptr, .call_site) | select(. != null)'
KHALF=18446603336221196288

# 1. report --anonymize of a plain recording
k_start record $EV -o "$T_TMP/p.ksr"
send_udp
k_stop
t_eq "record: exit 0" "0" "$?"
"$KSIGHT" report -j "$T_TMP/p.ksr" >"$T_TMP/p.jsonl"
t_ok "plain: kernel pointers in the events (the test's premise)" \
	[ "$(jq "$PTRS | select(. >= $KHALF)" "$T_TMP/p.jsonl" | wc -l)" -gt 0 ]
"$KSIGHT" report -j --anonymize "$T_TMP/p.ksr" >"$T_TMP/a.jsonl"
t_eq "report --anonymize -j: no pointer field in the kernel half" "0" \
	"$(jq "$PTRS | select(. >= $KHALF)" "$T_TMP/a.jsonl" | wc -l)"
t_eq "report --anonymize: no 0xffff... in the text" "0" \
	"$("$KSIGHT" report --anonymize "$T_TMP/p.ksr" | grep -c '=0xffff')"
# from the text (exact hex; jq reads numbers as doubles, which merge kernel pointers)
distinct() { grep -oE '(skbaddr|location|ptr|call_site)=0x[0-9a-f]+' | sort -u | wc -l; }
t_eq "report --anonymize: as many distinct pointers as before (same pointer, same token)" \
	"$("$KSIGHT" report "$T_TMP/p.ksr" | distinct)" "$("$KSIGHT" report --anonymize "$T_TMP/p.ksr" | distinct)"
t_eq "report --anonymize: NULL stays NULL" \
	"$(jq "$PTRS | select(. == 0)" "$T_TMP/p.jsonl" | wc -l)" "$(jq "$PTRS | select(. == 0)" "$T_TMP/a.jsonl" | wc -l)"
# shellcheck disable=SC2086
plain=$("$KSIGHT" report "$T_TMP/p.ksr" $PAIR | awk '$1 ~ /^net:/ {print $2, $4, $5}' | head -1)
# shellcheck disable=SC2086
anon=$("$KSIGHT" report --anonymize "$T_TMP/p.ksr" $PAIR | awk '$1 ~ /^net:/ {print $2, $4, $5}' | head -1)
t_ok "plain: the datagrams pair by skbaddr ($plain)" [ "${plain%% *}" -ge $N ]
t_eq "report --anonymize: the same pairs by skbaddr (count, unmatched, open)" "$plain" "$anon"
t_eq "report --anonymize-key: the same key, the same tokens" \
	"$("$KSIGHT" report -j --anonymize-key k1 "$T_TMP/p.ksr" | md5sum)" \
	"$("$KSIGHT" report -j --anonymize-key k1 "$T_TMP/p.ksr" | md5sum)"

# 2. record --anonymize: the pointers never reach the file
k_start record $EV --anonymize -o "$T_TMP/r.ksr"
send_udp
k_stop
t_eq "record --anonymize: exit 0" "0" "$?"
"$KSIGHT" report -j "$T_TMP/r.ksr" >"$T_TMP/r.jsonl"
t_ok "record --anonymize: pointer fields recorded" [ "$(jq "$PTRS" "$T_TMP/r.jsonl" | wc -l)" -gt 0 ]
t_eq "record --anonymize: none in the kernel half" "0" "$(jq "$PTRS | select(. >= $KHALF)" "$T_TMP/r.jsonl" | wc -l)"
# shellcheck disable=SC2086
t_ok "record --anonymize: the datagrams still pair by skbaddr" \
	[ "$("$KSIGHT" report "$T_TMP/r.ksr" $PAIR | awk '$1 ~ /^net:/ {print $2; exit}')" -ge $N ]

# 3. report --anonymize --perfetto: the timeline has neither the pointers nor the comms
"$KSIGHT" report --anonymize "$T_TMP/p.ksr" --perfetto "$T_TMP/t.json" >/dev/null
t_eq "report --anonymize --perfetto: written" "0" "$?"
t_eq "report --anonymize --perfetto: no pointer arg in the kernel half" "0" \
	"$(jq ".traceEvents[] | select(.ph == \"i\") | .args | (.skbaddr, .location, .ptr, .call_site) | select(. != null and . >= $KHALF)" "$T_TMP/t.json" | wc -l)"
t_eq "report --anonymize --perfetto: every process and thread named by a comm token" "true" \
	"$(jq '[.traceEvents[] | select(.ph == "M") | .args.name | test("^c-[0-9a-f]{12}$")] | length > 0 and all' "$T_TMP/t.json")"
