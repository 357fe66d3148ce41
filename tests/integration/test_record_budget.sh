# Integration: record --collect splits --max-memory between its ring buffers and the collectors: the BPF maps the process holds (memlock, from /proc/PID/fdinfo) stay within it.
. tests/lib.sh
need_root record_budget

# memlock PID: bytes of the BPF maps PID holds, each map once (the kernel's count in fdinfo)
memlock() {
	for f in /proc/$1/fdinfo/*; do
		awk '/^map_id:/ { id = $2 } /^memlock:/ { m = $2 } END { if (id != "") print id, m }' "$f" 2>/dev/null
	done | sort -u | awk '{ s += $2 } END { print s + 0 }'
}

t_orphans >"$T_TMP/orphans.before"
# 1M and 3M: the old split (each collector and the rings each sized from the whole) took
# 1088920 and 3293456 bytes here at 2 possible CPUs
for mm in 1:1048576 3:3145728; do
	m=${mm%%:*}M max=${mm#*:}
	if ! k_start record --collect syscalls,runqlat --max-memory $m -d 30 -o "$T_TMP/r$m.ksr"; then
		t_fail "record --collect --max-memory $m" "did not start"
		continue
	fi
	used=$(memlock $K_PID)
	k_stop
	t_eq "record --collect --max-memory $m: exit 0" 0 "$?"
	t_in "record --collect --max-memory $m: its maps' memlock within $max" 1 "$max" "$used"
	t_eq "record --collect --max-memory $m: both collectors' reports in the recording" 2 \
		"$("$KSIGHT" report "$T_TMP/r$m.ksr" 2>/dev/null | grep -cE '^=== (syscalls|runqlat) ===')"
done
t_no_leaks "nothing left attached" "$T_TMP/orphans.before"
exit $T_FAILED
