# Integration: the scheduler collectors' maps within the memory budget at 128 possible CPUs, every mode; too small a budget refused before load.
. tests/lib.sh
need_root runqlat
START_ID=$(t_prog_max_id)
MIB=1048576

for c in runqlat offcpu; do
	case $c in
	runqlat) modes="none cpu pid tid comm prio policy cgroup" ;;
	offcpu) modes="none pid tid comm cgroup prio policy" ;;
	esac
	for m in $modes; do
		by=
		[ $m = none ] || by="--by $m"
		KSIGHT_BUDGET_CPUS=128 "$KSIGHT" $c $by -j -d 0.5 >"$T_TMP/b.json" 2>"$T_TMP/b.err"
		rc=$?
		total=$(jq '.maps.total // -1' "$T_TMP/b.json" 2>/dev/null)
		alloc=$(jq '.maps.allocated // -1' "$T_TMP/b.json" 2>/dev/null)
		cpus=$(jq '.maps.possible_cpus // 0' "$T_TMP/b.json" 2>/dev/null)
		slots=$(jq '[.maps.by_map[] | select(.name == "ks_slots")] | length' "$T_TMP/b.json" 2>/dev/null)
		if [ "$rc" != 0 ] || [ "$cpus" != 128 ] || [ "$slots" != 1 ]; then
			t_fail "$c ${by:-(default)}: runs and reports its maps at 128 CPUs" "exit $rc, cpus $cpus, slots map $slots: $(head -c 300 "$T_TMP/b.err")"
			continue
		fi
		[ "$total" -gt 0 ] && [ "$total" -le $((64 * MIB)) ] &&
			t_pass "$c ${by:-(default)}: maps $((total / 1024)) KiB <= 64 MiB at 128 CPUs" ||
			t_fail "$c ${by:-(default)}: maps <= 64 MiB at 128 CPUs" "$total bytes"
		if [ $m = none ]; then
			[ "$alloc" -le $((16 * MIB)) ] &&
				t_pass "$c default: $((alloc / 1024)) KiB allocated at load <= 16 MiB" ||
				t_fail "$c default: allocated at load <= 16 MiB" "$alloc bytes"
		fi
	done
	# too small a budget: refused before load, naming the budget; nothing attached
	KSIGHT_BUDGET_CPUS=128 "$KSIGHT" $c --max-memory 1M -d 0.5 >/dev/null 2>"$T_TMP/small.err"
	rc=$?
	[ $rc != 0 ] && grep -q "memory budget of 1.0 MiB" "$T_TMP/small.err" &&
		t_pass "$c --max-memory 1M at 128 CPUs: refused (exit $rc): $(head -1 "$T_TMP/small.err" | cut -c1-100)..." ||
		t_fail "$c --max-memory 1M at 128 CPUs refused, naming the budget" "exit $rc: $(cat "$T_TMP/small.err")"
	t_eq "$c --max-memory 1M: nothing loaded" "" "$(t_unheld_progs "$START_ID" '^sched_(switch__|wakeup__|wakeup_ne|waking__|migrate_)' | tr '\n' ' ')"
done

# rows beyond the budget: a small budget, hundreds of short processes by pid; what the hash has no
# room for lands in the "other" row, and counters.to_other counts exactly the events it took
"$KSIGHT" runqlat --by pid -n 0 --max-memory 1M -j >"$T_TMP/o.json" 2>"$T_TMP/o.err" &
K_PID=$!
t_wait_for "$T_TMP/o.err" tracing
i=0
# one report over the whole loop, however slow (TCG)
while [ $i -lt 600 ]; do /bin/true; i=$((i + 1)); done
kill -INT $K_PID
wait $K_PID
rc=$?
if [ $rc != 0 ] && grep -q "memory budget" "$T_TMP/o.err"; then
	t_skip "other row" "1 MiB is too small for this machine's possible CPUs"
else
	rows=$(jq '.maps.by_map[] | select(.name == "srows") | .max_entries' "$T_TMP/o.json")
	to=$(jq '.counters.to_other // 0' "$T_TMP/o.json")
	other=$(jq '[.rows[] | select(.pid == -1 and .comm == "other") | .count + .voluntary + .involuntary] | add // 0' "$T_TMP/o.json")
	[ "$to" -gt 0 ] && t_pass "other row: $rows hash rows, overflow counted ($to events)" ||
		t_fail "other row: overflow counted" "to_other $to with $rows rows"
	t_eq "other row: holds exactly the events counted in to_other" "$to" "$other"
	# (1 MiB leaves slots for fewer tids than pid_max: aliasing tids may collide, counted apart)
	t_eq "other row: no row missing (map_full)" "0" "$(jq .lost_by.map_full "$T_TMP/o.json")"
fi

# -v lists each map's bytes
"$KSIGHT" runqlat -v -d 0.2 2>&1 >/dev/null | grep -q "ks_slots .*MiB" &&
	t_pass "-v lists the maps with their bytes" || t_fail "-v lists the maps" "no ks_slots line"

sleep 0.5
t_eq "no leaked programs" "" "$(t_unheld_progs "$START_ID" '^sched_(switch__|wakeup__|wakeup_ne|waking__|migrate_)' | tr '\n' ' ')"
