# Sourced by the distribution tests: reading a bpftrace reference histogram and comparing percentiles with ksight's.

# bt_pcts FILE: "count p50 p90" of the first lhist bpftrace printed in FILE (nearest rank; a
# bucket stands for its middle, the overflow bucket for its lower bound); "0 0 0" when empty.
bt_pcts() {
	awk '/^\[/ { s = $0; gsub(/[][(),|@]/, " ", s); split(s, f, " ")
			lo[++n] = f[1]; hi[n] = (f[2] == "...") ? f[1] : f[2]; c[n] = f[3]; tot += f[3] }
		function pct(q,   r, acc, i) { r = int(q * tot); if (r < q * tot) r++
			for (i = 1; i <= n; i++) { acc += c[i]; if (acc >= r) return int((lo[i] + hi[i]) / 2) } }
		END { if (!tot) { print "0 0 0"; exit } printf "%d %d %d\n", tot, pct(0.5), pct(0.9) }' "$1"
}

# raw_pcts FILE: "count p50 p90" (nearest rank) of the exact values bpftrace printed in FILE as
# a map of counts ("@l[VALUE]: COUNT"); "0 0 0" when there are none.
raw_pcts() {
	sed -n 's/^@[a-z_]*\[\([0-9]*\)\]: \([0-9]*\)$/\1 \2/p' "$1" | sort -n | awk '{ v[++m] = $1; c[m] = $2; n += $2 }
		function pct(q,   r, acc, i) { r = int(q * n); if (r < q * n) r++
			for (i = 1; i <= m; i++) { acc += c[i]; if (acc >= r) return v[i] } }
		END { if (!n) { print "0 0 0"; exit } printf "%d %d %d\n", n, pct(0.5), pct(0.9) }'
}

# d_near KS REF FRAC ABS: |KS - REF| <= FRAC * REF + REF / 16 (the width of ksight's log-linear
# slot there) + ABS (the reference's bucket, and what the order of the two programs adds)
d_near() {
	awk -v a="$1" -v b="$2" -v t="$3" -v x="$4" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b > 0 && d <= t * b + b / 16 + x) }'
}

# bt_start: runs the script bt_script prints under bpftrace, output in $T_TMP/ref.out, and
# returns once it is attached (BT_PID); non-zero, with nothing left running, when it is not.
# bpftrace says "Attaching N probes" before it attaches: it is attached when bpftool lists as
# many perf attachments (tracepoints, uprobes) held by it as the N probes less BEGIN and END
# (run by bpftrace itself).  Exact-value maps hold one key per distinct latency: room for
# 64 Ki of them (bpftrace's default is 4096; a full map drops counts without a word).
bt_start() {
	bt_script >"$T_TMP/ref.bt"
	: >"$T_TMP/ref.out"
	BPFTRACE_MAP_KEYS_MAX=65536 bpftrace "$T_TMP/ref.bt" >"$T_TMP/ref.out" 2>&1 &
	BT_PID=$!
	t_wait_for "$T_TMP/ref.out" "^Attaching [0-9]* probe" || { kill $BT_PID 2>/dev/null; return 1; }
	_bt_want=$(($(sed -n 's/^Attaching \([0-9]*\) probe.*/\1/p' "$T_TMP/ref.out") - $(grep -cE '^(BEGIN|END)([^A-Za-z0-9_]|$)' "$T_TMP/ref.bt")))
	_i=0
	while [ "$(bpftool -j perf show 2>/dev/null | jq --argjson p "$BT_PID" '[.[] | select(.pid == $p)] | length')" -lt "$_bt_want" ]; do
		_i=$((_i + 1))
		if [ $_i -gt $((T_WAIT * 20)) ] || ! kill -0 $BT_PID 2>/dev/null; then
			kill $BT_PID 2>/dev/null
			return 1
		fi
		sleep 0.05
	done
}

# map_pcts FILE MAP: "count p50 p90 p99" (nearest rank, as ksight ranks) of the exact values
# bpftrace printed in FILE as the map @MAP of counts ("@MAP[VALUE]: COUNT"); "0 0 0 0" when none.
map_pcts() {
	sed -n "s/^@$2\\[\\([0-9]*\\)\\]: \\([0-9]*\\)\$/\\1 \\2/p" "$1" | sort -n | awk '{ v[++m] = $1; c[m] = $2; n += $2 }
		function pct(q,   r, acc, i) { r = int(q * n); if (r < q * n) r++
			for (i = 1; i <= m; i++) { acc += c[i]; if (acc >= r) return v[i] } }
		END { if (!n) { print "0 0 0 0"; exit } printf "%d %d %d %d\n", n, pct(0.5), pct(0.9), pct(0.99) }'
}

# bt_misses: the runs the kernel skipped of the programs the bpftrace BT_PID attached, as
# "name:misses" (bpftool's recursion_misses: another perf or kprobe program was running on the CPU)
bt_misses() {
	for _id in $(bpftool -j perf show 2>/dev/null | jq --argjson p "$BT_PID" '.[] | select(.pid == $p) | .prog_id'); do
		bpftool -j prog show id "$_id" 2>/dev/null | jq -r '"\(.name):\(.recursion_misses // 0)"'
	done | tr '\n' ' '
}
