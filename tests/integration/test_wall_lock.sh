# Integration: `ksight wall --by lock` against tests/workloads/walllock.c's own count and timing of its contended pthread_mutex_lock calls, and wall's maps within a small budget at 128 CPUs.
. tests/lib.sh
need_root wall_lock

N1=3 N2=2 ROUNDS=4 HOLD=20
K_OUT=$T_TMP/lock.json
"$KSIGHT" wall --by lock -j -- "$WORKLOADS/walllock" $N1 $N2 $ROUNDS $HOLD >"$K_OUT" 2>"$T_TMP/lock.err"
t_eq "wall --by lock exits 0" "0" "$?"
grep '^lock ' "$K_OUT" >"$T_TMP/wl"
grep '^{' "$K_OUT" >"$T_TMP/report.json"
t_eq "walllock reports its two mutexes" "2" "$(wc -l <"$T_TMP/wl")"
t_eq "nothing lost" "0" "$(jq .lost "$T_TMP/report.json")"

# lock NAME ADDR contended COUNT lock_ns SUM holder TID waiters TID,...
while read -r _ name addr _ count _ sum _ holder _ waiters; do
	row=$(jq -c --arg a "$addr" '.rows[] | select(.lock == $a)' "$T_TMP/report.json")
	n=$(echo "$waiters" | tr ',' '\n' | wc -l)
	t_eq "mutex $name: one row for its address" "1" "$(echo "$row" | grep -c .)"
	t_eq "mutex $name: a private futex of the workload's process" "private" "$(echo "$row" | jq -r .kind)"
	t_eq "mutex $name: waits = the workload's contended lock calls" "$count" "$(echo "$row" | jq .waits)"
	t_eq "mutex $name: construction: $N1 or $N2 waiters x $ROUNDS rounds" "$((n * ROUNDS))" "$count"
	t_eq "mutex $name: waiters = its $n threads" "$n" "$(echo "$row" | jq .waiters)"
	t_eq "mutex $name: the histogram counts every wait" "$count" "$(echo "$row" | jq .wait_ns.count)"
	t_eq "mutex $name: the wakers' counts add up to the waits" "$count" "$(echo "$row" | jq '[.wakers[]] | add')"
	# the holder's unlock ends one wait a round; each waiter's unlock the next waiter's
	t_eq "mutex $name: the holder woke one waiter a round" "$ROUNDS" \
		"$(echo "$row" | jq --arg t ":$holder" '[.wakers | to_entries[] | select(.key | endswith($t)) | .value] | add')"
	t_eq "mutex $name: every other wake by one of its waiters" "$((count - ROUNDS))" \
		"$(echo "$row" | jq --arg w ",$waiters," '[.wakers | to_entries[] | select(.key as $k | $w | contains("," + ($k | sub(".*:"; "")) + ",")) | .value] | add // 0')"
	# asleep <= the workload's time in pthread_mutex_lock (which adds the calls and the wait for a
	# CPU after the wakeup); at least 90% of it: each wait is >= HOLD ms, the rest is microseconds
	ks=$(echo "$row" | jq .wait_total_ns)
	t_in "mutex $name: wait_total_ns ($ks) within 90..100% of the workload's $sum" "$((sum * 9 / 10))" "$sum" "$ks"
done <"$T_TMP/wl"

# text output: the lock rows with their columns
"$KSIGHT" wall --by lock -- "$WORKLOADS/walllock" 1 1 1 5 >"$T_TMP/lock.txt" 2>/dev/null
t_eq "text: a header of the lock columns and the wakers" "1" \
	"$(grep -c '^pid  *comm  *lock  *kind  *waits  *waiters  *wait_total .* wakers$' "$T_TMP/lock.txt")"
a=$(awk '$1 == "lock" && $2 == "A" { print $3 }' "$T_TMP/lock.txt")
t_eq "text: mutex A's row, one wait by one waiter" "1" \
	"$(grep -c "walllock  *$a  *private  *1  *1 " "$T_TMP/lock.txt")"

# kernel locks: four dd on one CPU write to one file, so they contend on its inode's rwsem and a
# writer preempted holding it makes the others sleep on it (in D): lock time, not other D
if bpftool btf dump file /sys/kernel/btf/vmlinux 2>/dev/null | grep -q "btf_trace_contention_begin'"; then
	DD="for i in 1 2 3 4; do dd if=/dev/zero of=$T_TMP/f bs=1M count=100 conv=notrunc 2>/dev/null & done; wait"
	"$KSIGHT" wall --by comm -j -- taskset -c 0 sh -c "$DD" 2>/dev/null | grep '^{' >"$T_TMP/dd.json"
	ln=$(jq '[.rows[] | select(.comm == "dd") | .lock_ns] | add' "$T_TMP/dd.json")
	t_in "kernel locks: dd's sleeps on the inode's rwsem are lock time ($ln ns)" 1 1000000000000 "$ln"
	"$KSIGHT" wall --by lock -j -- taskset -c 0 sh -c "$DD" 2>/dev/null | grep '^{' >"$T_TMP/dd.json"
	row=$(jq -c '[.rows[] | select(.kind == "kernel")] | max_by(.waits)' "$T_TMP/dd.json")
	t_eq "kernel locks: a row keyed by the lock alone (pid 0)" "0 [kernel]" "$(echo "$row" | jq -r '"\(.pid) \(.comm)"')"
	t_in "kernel locks: its waiters are dd's (2-4 of them)" 2 4 "$(echo "$row" | jq .waiters)"
	t_eq "kernel locks: woken by dd" "true" "$(echo "$row" | jq '[.wakers | keys[] | startswith("dd:")] | all')"
else
	t_skip "kernel locks" "no lock:contention_begin in this kernel (v5.19+)"
fi

# a window with no thread in it (a filter that nothing passes: a process asleep since before the
# start): an empty report; under tests/san.sh UBSan checks the drain of no rows
sleep 30 &
SP=$!
T_CLEANUP="kill $SP 2>/dev/null"
"$KSIGHT" wall -p $SP -d 0.3 -j >"$T_TMP/empty.json" 2>"$T_TMP/empty.err"
t_eq "a window with no thread: exits 0" "0" "$?"
t_eq "a window with no thread: no rows" "0" "$(grep '^{' "$T_TMP/empty.json" | jq '.rows | length')"
kill $SP 2>/dev/null

# the budget: at 128 possible CPUs wall's maps, the throttle marks and (by lock) the waits'
# hash and ring included, fit --max-memory's least, 1 MiB
for by in tid lock; do
	KSIGHT_BUDGET_CPUS=128 "$KSIGHT" wall --by $by --max-memory 1M -j -- /bin/true >"$T_TMP/b.json" 2>"$T_TMP/b.err"
	t_eq "--by $by --max-memory 1M at 128 CPUs: exits 0" "0" "$?"
	t_in "--by $by --max-memory 1M at 128 CPUs: maps within it" 1 1048576 \
		"$(grep '^{' "$T_TMP/b.json" | jq '.maps.total')"
done

exit $T_FAILED
