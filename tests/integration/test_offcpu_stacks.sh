# Integration: `ksight offcpu --stacks` on a thread blocked in read() on a pipe K times: the read path, user frames through libc, the time.
. tests/lib.sh
need_root offcpu_stacks
K=20
MS=20

# sum of the values of folded lines matching an awk regex on the stack part
fsum() { awk -v re="$2" '{ n = $NF; s = $0; sub(/ [0-9]+$/, "", s); if (s ~ re) t += n } END { printf "%.0f\n", t + 0 }' "$1"; }

g_start "$T_TMP/pb" "$WORKLOADS/pipe_block" $K $MS || t_fail "workload" "did not start"
set -- $G_LINE
TID=$3
k_start offcpu --stacks -t "$TID" --svg "$T_TMP/off.svg" --pprof "$T_TMP/off.pb.gz"
kill -USR1 "$G_PID"
wait "$G_PID"
k_stop
t_eq "exit 0" "0" "$?"
blocked=$(awk '/^done/ { print $2 }' "$G_FILE")
# libc's read may show a call inlined in it (read;__libc_read_[i]) where libc's DWARF is installed
read_ns=$(fsum "$K_OUT" '^pipe_block;.*;reader;read;.*pipe_read_.k.;.*schedule_.k.$') # no escapes: busybox awk -v eats them
all_ns=$(fsum "$K_OUT" '.')
[ "$read_ns" -gt 0 ] && t_pass "read path: user frames through libc's read into the kernel's pipe_read" ||
	t_fail "read path" "no stack ...;reader;read;...pipe_read_[k];...schedule_[k] in: $(head -c 600 "$K_OUT")"
# the workload times each read itself: off-CPU time is that, less the few microseconds on the CPU
awk -v n="$read_ns" -v w="$blocked" 'BEGIN { d = n - w; if (d < 0) d = -d; exit !(w > 0 && d <= 0.05 * w) }' &&
	t_pass "read path: $read_ns ns within 5% of the reads' own time ($blocked ns)" ||
	t_fail "read path: time" "$read_ns ns, the reads took $blocked ns"
t_eq "the thread's off-CPU time is all in the read path" "$all_ns" "$read_ns"
if command -v xmllint > /dev/null 2>&1; then
	t_ok "svg: well-formed" xmllint --noout "$T_TMP/off.svg"
fi
if command -v go > /dev/null 2>&1; then
	unit=$(HOME=${HOME:-/root} go tool pprof -top "$T_TMP/off.pb.gz" 2> /dev/null | awk '/^Type:/ { print $2 }')
	t_eq "pprof: read by go tool pprof, type offcpu" "offcpu" "$unit"
	# by address, as profile's: the reader thread's samples labelled with its tid, libc mapped with its build ID
	HOME=${HOME:-/root} go tool pprof -raw "$T_TMP/off.pb.gz" >"$T_TMP/off.raw" 2>/dev/null
	t_ok "pprof: samples carry tid:[$TID]" grep -q "tid:\[$TID\]" "$T_TMP/off.raw"
	t_ok "pprof: libc's mapping with its build ID" grep -Eq '^[0-9]+: 0x[0-9a-f]+/0x[0-9a-f]+/0x[0-9a-f]+ [^ ]*libc[.]so[.]6 [0-9a-f]{40} ' "$T_TMP/off.raw"
fi

# --call-graph cfi: the user stack walked in the kernel at each switch with the .eh_frame tables
# (-t: the thread's process's tables are loaded before the first switch): the stack has reader's
# callee wait_for_byte, which frame pointers skip, and goes on above reader into libc's thread
# start (start_thread where libc's symbols are installed, "[unknown] (libc.so.6)" where only its
# dynamic ones are, as in the guests), and the time is the same
if [ "$(uname -m)" = x86_64 ]; then
	g_start "$T_TMP/pbc" "$WORKLOADS/pipe_block" $K $MS || t_fail "cfi: workload" "did not start"
	set -- $G_LINE
	k_start offcpu --stacks --call-graph cfi -t "$3" -v
	kill -USR1 "$G_PID"
	wait "$G_PID"
	k_stop
	t_eq "cfi: exit 0" "0" "$?"
	blocked=$(awk '/^done/ { print $2 }' "$G_FILE")
	deep_ns=$(fsum "$K_OUT" '^pipe_block;[^;]+;.*reader;wait_for_byte;read;.*pipe_read_.k.;.*schedule_.k.$')
	all_ns=$(fsum "$K_OUT" '.')
	awk -v n="$deep_ns" -v w="$blocked" 'BEGIN { d = n - w; if (d < 0) d = -d; exit !(w > 0 && d <= 0.05 * w) }' &&
		t_pass "cfi: $deep_ns ns through the thread start;reader;wait_for_byte;read, within 5% of the reads' $blocked ns" ||
		t_fail "cfi: the whole path" "$deep_ns of $all_ns ns, the reads took $blocked: $(head -c 600 "$K_OUT")"
	t_eq "cfi: no walk by frame pointers (the tables were in first)" "0" \
		"$(sed -n 's/.*cfi: [0-9]* walks, [0-9.]* frames each (\([0-9]*\) by frame pointers[,;)].*/\1/p' "$K_ERR" | tail -1)"
else
	t_skip "offcpu cfi" "--call-graph cfi is x86-64 only"
fi
"$KSIGHT" offcpu --stacks --call-graph dwarf -d 0.1 2> "$T_TMP/dw.err"
t_eq "offcpu --stacks --call-graph dwarf: exit 2, one line" "2 1" "$? $(wc -l < "$T_TMP/dw.err")"

# -j: the same stacks as JSON, in nanoseconds
g_start "$T_TMP/pb2" "$WORKLOADS/pipe_block" 5 10 || t_fail "workload" "did not start"
set -- $G_LINE
k_start offcpu --stacks -t "$3" -j
kill -USR1 "$G_PID"
wait "$G_PID"
k_stop
t_eq "json: collector and unit" "offcpu nanoseconds" "$(k_jq '"\(.collector) \(.unit)"')"
t_ok "json: a stack through read and pipe_read" test "$(k_jq '[.stacks[] | select(any(.frames[]; .name == "read" and .kind == "user") and any(.frames[]; (.name | test("pipe_read")) and .kind == "kernel")) | .count] | add // 0')" -gt 0

# plain offcpu is still the collector; --stacks is refused inside `run`
t_ok "offcpu without --stacks: the collector's rows" sh -c "'$KSIGHT' offcpu -d 0.2 -j | jq -e .rows > /dev/null"
"$KSIGHT" run offcpu --stacks -d 1 2> "$T_TMP/run.err"
t_eq "run offcpu --stacks: exit 2, one line" "2 1" "$? $(wc -l < "$T_TMP/run.err")"
exit $T_FAILED
