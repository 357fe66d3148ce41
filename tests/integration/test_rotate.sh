# Integration: record --max-size stops at the size (exit 0, counted); --rotate SIZE --keep N writes complete files FILE.0, FILE.1... with exact accounting across them.
. tests/lib.sh
need_root rotate

N=100000
R=$T_TMP/r.ksr
ij() { "$KSIGHT" info -j "$1"; }
# the rotated files of base $1, oldest first
files() { ls -v "$1".* 2>/dev/null; }
sum_of() { # sum_of JQ FILES...: the JQ number of every file's info, added
	_q=$1; shift
	for f in "$@"; do ij "$f" | jq "$_q"; done | awk '{ s += $1 } END { print s + 0 }'
}

# 1. --max-size: the file stops growing at the size, the recording ends, says so, exits 0
w_start -n $N
k_start record -e raw_syscalls:sys_enter -p "$W_PID" --max-size 200K -o "$T_TMP/m.ksr"
w_go
wait "$K_PID"
t_eq "max-size: exit 0" "0" "$?"
size=$(stat -c %s "$T_TMP/m.ksr")
t_ok "max-size: the file is at most 200K and nearly that ($size bytes)" [ "$size" -le 204800 -a "$size" -gt 150000 ]
t_eq "max-size: says it stopped there" "1" "$(grep -c 'stopped at --max-size 204800' "$K_ERR")"
ij "$T_TMP/m.ksr" >"$T_TMP/m.json"
t_eq "max-size: closed, undamaged" "true 0 0" "$(jq -r '"\(.closed) \(.bad_chunks) \(.cut_bytes)"' "$T_TMP/m.json")"
t_eq "max-size: the file holds every recorded event" "$(jq -r .trailer.recorded "$T_TMP/m.json")" "$(jq .events_total "$T_TMP/m.json")"
t_eq "max-size: recorded + dropped + lost = produced, exactly" "yes true" \
	"$(jq -r '.trailer | "\(.exact) \((.recorded | tonumber) + (.dropped | tonumber) + (.lost | tonumber) + (.sampled_out | tonumber) == (.produced | tonumber))"' "$T_TMP/m.json")"
t_ok "max-size: the rest was dropped, not recorded ($(jq -r .trailer.dropped "$T_TMP/m.json"))" \
	[ "$(jq -r .trailer.dropped "$T_TMP/m.json")" -gt 0 ]

# with losses (a tiny ring): the chunks' losses still add up to the trailer's
w_start -n $N
k_start record -e raw_syscalls:sys_enter -p "$W_PID" -b 4096 --max-size 300K -o "$T_TMP/ml.ksr"
w_go
wait "$K_PID"
ij "$T_TMP/ml.ksr" >"$T_TMP/ml.json"
t_eq "max-size, tiny ring: exact, the chunks' losses = the trailer's" "yes true" \
	"$(jq -r '"\(.trailer.exact) \(([.cpus[].lost] | add) == (.trailer.lost | tonumber))"' "$T_TMP/ml.json")"
t_ok "max-size, tiny ring: at most 300K" [ "$(stat -c %s "$T_TMP/ml.ksr")" -le 307200 ]

# 2. --rotate: complete files of at most SIZE; the N getppid exactly, over all of them
w_start -n $N
k_start record -e raw_syscalls:sys_enter -p "$W_PID" --rotate 1M -o "$R"
w_go
wait "$K_PID"
t_eq "rotate: exit 0" "0" "$?"
set -- $(files "$R")
t_ok "rotate: several files ($#)" [ $# -ge 5 ]
t_eq "rotate: named FILE.0 to FILE.$(($# - 1)), no FILE itself" "$R.0 $R.$(($# - 1)) no" "$1 $(eval echo \${$#}) $([ -e "$R" ] && echo yes || echo no)"
big=0
for f in "$@"; do [ "$(stat -c %s "$f")" -le 1048576 ] || big=$((big + 1)); done
t_eq "rotate: every file at most 1M" "0" "$big"
bad=0
for f in "$@"; do
	ij "$f" | jq -e '.closed and .bad_chunks == 0 and .cut_bytes == 0 and (.manifest.event == ["raw_syscalls:sys_enter"])' >/dev/null || bad=$((bad + 1))
done
t_eq "rotate: each file complete (manifest, closed, undamaged)" "0" "$bad"
last=$(eval echo \${$#})
ij "$last" >"$T_TMP/last.json"
total=$(sum_of .events_total "$@")
t_eq "rotate: events over the files = recorded (last trailer)" "$(jq -r .trailer.recorded "$T_TMP/last.json")" "$total"
t_eq "rotate: events over the files = produced - lost" \
	"$(jq -r '.trailer | (.produced | tonumber) - (.lost | tonumber) - (.sampled_out | tonumber)' "$T_TMP/last.json")" "$total"
n110=0
for f in "$@"; do n110=$((n110 + $("$KSIGHT" report -j "$f" | jq -s 'map(select(.fields.id == 110)) | length'))); done
t_eq "rotate: exactly N getppid over the files" "$N" "$n110"
mid=$2
t_eq "rotate: a middle file reads on its own (report = its count)" "$(ij "$mid" | jq .events_total)" "$("$KSIGHT" report -j "$mid" | wc -l)"
t_eq "rotate: file trailers chain (file.events = events, rotation.index)" "true" \
	"$(ij "$mid" | jq '(.trailer["file.events"] | tonumber) == .events_total and .trailer["rotation.index"] == 1 and .manifest["rotation.index"] == 1')"

# 3. with losses (a tiny ring): still exact across the files
w_start -n $N
k_start record -e raw_syscalls:sys_enter -p "$W_PID" -b 4096 --rotate 256K -o "$T_TMP/l.ksr"
w_go
wait "$K_PID"
set -- $(files "$T_TMP/l.ksr")
ij "$(eval echo \${$#})" >"$T_TMP/last.json"
lost=$(jq -r .trailer.lost "$T_TMP/last.json")
t_eq "rotate, tiny ring: events over the files = produced - lost ($lost lost)" \
	"$(jq -r '.trailer | (.produced | tonumber) - (.lost | tonumber) - (.sampled_out | tonumber)' "$T_TMP/last.json")" \
	"$(sum_of .events_total "$@")"
t_eq "rotate, tiny ring: the files' losses add up to the total" "$lost" "$(sum_of '[.cpus[].lost] | add // 0' "$@")"
t_eq "rotate, tiny ring: exact" "yes" "$(jq -r .trailer.exact "$T_TMP/last.json")"

# 4. --keep N: only the N newest files stay
w_start -n $N
k_start record -e raw_syscalls:sys_enter -p "$W_PID" --rotate 256K --keep 3 -o "$T_TMP/k.ksr"
w_go
wait "$K_PID"
set -- $(files "$T_TMP/k.ksr")
lastidx=$(ij "$3" | jq -r '.trailer["rotation.index"]')
t_eq "keep 3: three files left" "3" "$#"
t_ok "keep 3: older ones were made and deleted (last index $lastidx)" [ "$lastidx" -ge 5 ]
t_eq "keep 3: the newest three" "$T_TMP/k.ksr.$((lastidx - 2)) $T_TMP/k.ksr.$lastidx" "$1 $3"
ij "$1" >"$T_TMP/first.json"
ij "$3" >"$T_TMP/last.json"
# what the deleted files held: the first kept file's events_through less its own
gone=$(jq -r '.trailer | (.["rotation.events_through"] | tonumber) - (.["file.events"] | tonumber)' "$T_TMP/first.json")
t_eq "keep 3: kept + deleted events = recorded" "$(jq -r .trailer.recorded "$T_TMP/last.json")" \
	"$(($(sum_of .events_total "$@") + gone))"

# 5. bad input: exit 2
"$KSIGHT" record -e sched:sched_switch --keep 3 -o "$T_TMP/x.ksr" -d 1 2>"$T_TMP/e"
t_eq "keep without rotate: exit 2" "2 1" "$? $(grep -c 'goes with --rotate' "$T_TMP/e")"
"$KSIGHT" record -e sched:sched_switch --max-size 1K -o "$T_TMP/x.ksr" -d 1 2>"$T_TMP/e"
t_eq "max-size below 64K: exit 2" "2 1" "$? $(grep -c "invalid --max-size '1K'" "$T_TMP/e")"
"$KSIGHT" record -e sched:sched_switch --max-size 1M --rotate 1M -o "$T_TMP/x.ksr" -d 1 2>"$T_TMP/e"
t_eq "max-size with rotate: exit 2" "2" "$?"
t_eq "bad input: no file made" "no" "$([ -e "$T_TMP/x.ksr" ] && echo yes || echo no)"
t_no_leaks ks_record
