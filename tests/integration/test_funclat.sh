# Integration: `ksight funclat` on a workload calling fl_sleep exactly N times: counts, p50 against the program's own median, USDT, globs, -p library names, kernel functions (fentry and kprobes where the kernel has them), a bpftrace reference distribution, bad input.
. tests/lib.sh
need_root funclat
START_ID=$(t_prog_max_id)
W=$WORKLOADS/fl_calls
[ -x "$W" ] || { t_fail "workload" "no $W (make all)"; exit 1; }
N=200
US=2000

# fl_run ARGS...: the workload (N calls of US us each) under `ksight funclat ARGS -p PID -j`;
# the report in K_OUT, the workload's "done N median_ns" line in DONE.
fl_run() {
	g_start "$T_TMP/w" "$W" $N $US ${FL_VARY:-} || { t_fail "workload" "did not start"; return 1; }
	k_start funclat "$@" -p "$G_PID" -j || { t_fail "funclat $*" "ksight did not start: $(cat "$K_ERR")"; kill "$G_PID"; return 1; }
	SW0=$(vsw "$G_PID")
	kill -USR1 "$G_PID"
	# a workload cut short leaves a report of fewer calls, every one counted: said as such, not
	# left to the count checks to look like calls ksight missed
	if ! t_wait_for "$G_FILE" "^done"; then
		kill "$G_PID"
		wait "$G_PID"
		k_stop
		t_fail "funclat $*" "the workload did not make its $N calls within ${T_WAIT}s ($(grep '^stopped' "$G_FILE")); the report is partial"
		return 1
	fi
	DONE=$(grep '^done' "$G_FILE")
	# for a short count: the kernel's own count of the workload's sleeps (each call blocks once),
	# with no probe of its own, and whether ksight was still running when the calls ended
	SLEPT=$(($(vsw "$G_PID") - SW0))
	# (not kill -0: an exited ksight the shell has not reaped yet is a zombie, and kill -0 succeeds)
	K_LIVE=$(awk '{ print ($3 == "Z" ? "exited" : "running") }' "/proc/$K_PID/stat" 2>/dev/null || echo exited)
	kill -USR1 "$G_PID"
	wait "$G_PID"
	wait "$K_PID"
	K_RC=$?
}
# vsw PID: the process's voluntary context switches (-1 when it is gone)
vsw() { cat "/proc/$1/status" 2>/dev/null | awk '/^voluntary_ctxt_switches/ { print $2; f = 1 } END { if (!f) print -1 }'; }
# row FUNCTION FIELD: a field of the function's row (0 when there is none)
row() { k_jq --arg f "$1" "(.rows[] | select(.function == \$f) | $2) // 0"; }
# near A B FRAC: |A - B| <= FRAC * B + B / 16 (the log-linear slot)
near() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b > 0 && d <= t * b + b / 16) }'; }

# 1. one function, exactly N calls; the latency is the sleep: p50 near the program's own median
fl_run "$W:fl_sleep"
t_eq "fl_sleep: exit 0 at the process's exit" "0" "$K_RC"
t_eq "fl_sleep: $N calls" "$N" "$(row fl_sleep .count)"
t_eq "fl_sleep: $N timed" "$N" "$(row fl_sleep .latency_ns.count)"
set -- $DONE
P50=$(row fl_sleep .latency_ns.p50)
# the program's median includes its clock reads and the two probes' cost (~10-20 us each here): 5%
near "$P50" "$3" 0.05 && t_pass "fl_sleep: p50 $P50 ns near the program's own median $3 ns" ||
	t_fail "fl_sleep: p50 near the program's median" "$P50 vs $3"
t_eq "fl_sleep: hook uprobe, nothing lost" "uprobe 0" "$(k_jq '"\(.hook) \(.lost)"')"
# always present: a hash map lock that gave up is a loss with its own name (issue 11)
t_eq "fl_sleep: map_update_failed reported" "0" "$(k_jq .lost_by.map_update_failed)"
t_ok "fl_sleep: total_ns is the histogram's sum" test "$(row fl_sleep .total_ns)" = "$(row fl_sleep .latency_ns.sum)"

# 2. globs over the ELF's symbols, and a USDT probe fired N times
fl_run "$W:fl_*" "$W:ksight_test:tick"
t_eq "glob fl_*: three functions, calls N N N/2" "fl_sleep=$N fl_tiny_a=$N fl_tiny_b=$((N / 2))" \
	"$(k_jq '[.rows[] | select(.function | startswith("fl_")) | "\(.function)=\(.count)"] | sort | join(" ")')"
t_eq "usdt ksight_test:tick: $N firings, no histogram" "$N false" "$(row ksight_test:tick .count) $(k_jq '[.rows[] | select(.function == "ksight_test:tick") | has("latency_ns")] | .[0]')"
t_eq "glob + usdt: hook" "uprobe+usdt" "$(k_jq .hook)"
t_eq "usdt glob: provider and probe globs" "$N" "$(fl_run "$W:ksight_*:ti*" >/dev/null; row ksight_test:tick .count)"

# 3. a library by its short name through the process's maps (-p): fl_sleep's nanosleep, N times
fl_run "libc:nanosleep"
t_eq "libc:nanosleep with -p: $N calls" "$N" "$(row nanosleep .count)"
t_eq "libc:nanosleep with -p: $N timed, nothing lost" "$N 0" "$(row nanosleep .latency_ns.count) $(k_jq .lost)"
t_eq "libc:nanosleep with -p: module libc.so.6" "libc.so.6" "$(k_jq '.rows[0].module')"
[ "$(row nanosleep .count)" = "$N" ] ||
	echo "# libc:nanosleep short: the workload blocked $SLEPT times (voluntary switches) during its $N calls; ksight $K_LIVE at their end; report $(k_jq -c '{duration_s, lost_by}'); $(tr '\n' ' ' <"$K_ERR")"

# 4. kernel functions: fentry/fexit where the kernel has trampolines, kprobes otherwise
FENTRY=$(k_feature fentry) KPROBE=$(k_feature kprobe)
if [ "$FENTRY" != OK ] && [ "$KPROBE" != OK ]; then
	t_skip "kernel function" "this kernel has neither fentry nor kprobes (doctor: fentry $FENTRY, kprobe $KPROBE)"
	"$KSIGHT" funclat do_nanosleep -d 1 2>"$T_TMP/k.err"
	t_eq "kernel function without fentry and kprobes: exit 2, one line" "2 1" "$? $(wc -l <"$T_TMP/k.err")"
	grep -q "neither" "$T_TMP/k.err" && t_pass "kernel function: the error says why" ||
		t_fail "kernel function: the error says why" "$(cat "$T_TMP/k.err")"
else
	for hook in fentry kprobe; do
		[ "$(k_feature $hook)" = OK ] || { t_skip "kernel $hook" "doctor: $hook $(k_feature $hook)"; continue; }
		KSIGHT_HOOK=$hook fl_run "do_nanosl*"
		t_eq "kernel $hook: hook" "$hook" "$(k_jq .hook)"
		t_eq "kernel $hook: do_nanosleep $N calls (glob)" "$N" "$(row do_nanosleep .count)"
		# kprobes: the return is matched by the stack pointer too (a kretprobe maxactive missed is counted)
		t_eq "kernel $hook: $N timed, nothing lost" "$N 0" "$(row do_nanosleep .latency_ns.count) $(k_jq .lost)"
		set -- $DONE
		near "$(row do_nanosleep .latency_ns.p50)" "$3" 0.05 &&
			t_pass "kernel $hook: p50 near the program's median $3 ns" ||
			t_fail "kernel $hook: p50 near the program's median" "$(row do_nanosleep .latency_ns.p50) vs $3"
	done
	# the same kernel target through `run --funclat`, the path run and serve share: beside syscalls
	# with the hook chosen as on any node (fentry first), and alone with kprobes forced
	for hook in auto kprobe; do
		[ $hook = auto ] && cols=syscalls || cols=
		[ $hook = kprobe ] && [ "$KPROBE" != OK ] && { t_skip "run --funclat kernel kprobe" "doctor: kprobe $KPROBE"; continue; }
		g_start "$T_TMP/rw" "$W" $N $US || { t_fail "workload" "did not start"; continue; }
		# shellcheck disable=SC2086
		if ! KSIGHT_HOOK=${hook#auto} k_start run $cols --funclat "do_nanosl*" -p "$G_PID" -j; then
			t_fail "run --funclat kernel $hook" "ksight did not start: $(cat "$K_ERR")"
			kill "$G_PID"
			continue
		fi
		kill -USR1 "$G_PID"
		t_wait_for "$G_FILE" "^done"
		kill -USR1 "$G_PID"
		wait "$G_PID"
		wait "$K_PID"
		krc=$?
		want=fentry
		[ $hook = kprobe ] || [ "$FENTRY" != OK ] && want=kprobe
		t_eq "run --funclat kernel $hook: exit 0, hook $want, do_nanosleep $N calls, each timed, nothing lost" "0 $want $N $N 0" \
			"$krc $(jq -r 'select(.collector == "funclat") | "\(.hook) \((.rows[] | select(.function == "do_nanosleep") | "\(.count) \(.latency_ns.count)") // "0 0") \(.lost)"' "$K_OUT")"
		[ $hook = auto ] && t_eq "run --funclat kernel: syscalls' report beside it has the $N nanosleeps" "$N" \
			"$(jq -r 'select(.collector == "syscalls") | (.rows[] | select(.syscall == "clock_nanosleep") | .count) // 0' "$K_OUT")"
	done
fi

# 5. the distribution against bpftrace's uprobe/uretprobe with nsecs over the same calls
if command -v bpftrace >/dev/null 2>&1; then
	. tests/integration/dist_ref.sh
	FL_VARY=vary
	g_start "$T_TMP/w" "$W" $N $US vary || t_fail "workload" "did not start"
	bt_script() {
		cat <<BT
uprobe:$W:fl_sleep /pid == $G_PID/ { @s[tid] = nsecs; }
uretprobe:$W:fl_sleep /pid == $G_PID && @s[tid]/ { @l = lhist(nsecs - @s[tid], 0, 50000000, 50000); delete(@s[tid]); }
END { clear(@s); }
BT
	}
	k_start funclat "$W:fl_sleep" -p "$G_PID" -j
	if bt_start; then
		kill -USR1 "$G_PID"
		t_wait_for "$G_FILE" "^done"
		t_interrupt $BT_PID
		kill -USR1 "$G_PID"
		wait "$G_PID"
		wait "$K_PID"
		set -- $(bt_pcts "$T_TMP/ref.out")
		KS="$(row fl_sleep .latency_ns.count) $(row fl_sleep .latency_ns.p50) $(row fl_sleep .latency_ns.p90)"
		echo "# fl_sleep (0.5-4 ms): bpftrace count $1 p50 $2 p90 $3; ksight $KS"
		t_eq "reference: both saw $N calls" "$N $N" "$1 $(row fl_sleep .latency_ns.count)"
		# within 5% + slot + 50 us (the reference's 50 us bucket, up to 50 ms (bpftrace's 1000 buckets): a loaded machine
		# stretches the sleeps; and the two probes' order)
		d_near "$(row fl_sleep .latency_ns.p50)" "$2" 0.05 50000 && t_pass "reference: p50 near bpftrace's $2" ||
			t_fail "reference: p50 near bpftrace's" "$(row fl_sleep .latency_ns.p50) vs $2"
		d_near "$(row fl_sleep .latency_ns.p90)" "$3" 0.05 50000 && t_pass "reference: p90 near bpftrace's $3" ||
			t_fail "reference: p90 near bpftrace's" "$(row fl_sleep .latency_ns.p90) vs $3"
	else
		t_fail "reference" "bpftrace did not attach"
		kill "$G_PID"
		k_stop
	fi
	FL_VARY=
else
	t_skip "reference distribution" "no bpftrace"
fi

# 6. bad input: one line, exit 2, nothing attached
bad() {
	_name=$1
	shift
	"$KSIGHT" funclat "$@" -d 1 >"$T_TMP/bad.out" 2>"$T_TMP/bad.err"
	t_eq "bad input: $_name: exit 2, one line" "2 1" "$? $(wc -l <"$T_TMP/bad.err")"
}
bad "no target"
bad "no such binary" /nonexistent/prog:main
bad "no such library" libnosuchlibrary.so.9:foo
bad "no function matches" "$W:no_such_fn*"
bad "no such usdt probe" "$W:ksight_test:nosuch"
bad "too many colons" a:b:c:d
bad "empty function" "$W:"
bad "not an ELF file" /etc/passwd:main
bad "-p of no process" libc:malloc -p 2147483646
bad "no kernel function matches" 'ksight_no_such_kernel_fn*'
"$KSIGHT" funclat "$W:fl_sleep" nosuchlib:foo -d 1 2>/dev/null
t_eq "bad input: a bad target beside a good one: exit 2" "2" "$?"
"$KSIGHT" run funclat -d 1 >/dev/null 2>"$T_TMP/run.err"
# run and serve take funclat's targets as --funclat TARGET (test_run.sh, test_serve.sh): without one, bad usage
t_eq "run funclat without --funclat: exit 2, one line naming --funclat" "2 1 1" \
	"$? $(wc -l <"$T_TMP/run.err") $(grep -c -- '--funclat TARGET' "$T_TMP/run.err")"
sleep 0.5
t_eq "no leaked programs" "" "$(t_unheld_progs "$START_ID" '^fl_' | tr '\n' ' ')"
exit $T_FAILED
