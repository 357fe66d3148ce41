# Integration: `ksight profile --call-graph cfi` (CFI tables walked in the kernel) on prof_qsort (no frame pointers, PIE): full stacks through libc's qsort, exact sample rate, and the same stacks as dwarf mode on the same run; past dlopen, JIT code and signal frames.
. tests/lib.sh
need_root profile_cfi
W=$WORKLOADS/prof_qsort
HZ=99
if [ "$(uname -m)" != x86_64 ]; then
	"$KSIGHT" profile --call-graph cfi -d 1 2> "$T_TMP/arch.err"
	t_eq "cfi: exit 2 off x86-64" "2" "$?"
	t_ok "cfi: says it is x86-64 only" grep -q "x86-64 only" "$T_TMP/arch.err"
	exit $T_FAILED
fi

# folded lines from a profile's JSON (the frames' names joined, then the count)
folded() { jq -r '.stacks[] | "\([.frames[].name] | join(";")) \(.count)"' "$1"; }
fsum() { awk -v re="$2" '{ n = $NF; s = $0; sub(/ [0-9]+$/, "", s); if (s ~ re) t += n } END { print t + 0 }' "$1"; }
# mean frames below the comm of the stacks matching RE
fdepth() { awk -v re="$2" '{ n = $NF; s = $0; sub(/ [0-9]+$/, "", s); if (s ~ re) { t += n; d += n * (split(s, a, ";") - 1) } } END { printf "%.2f\n", t ? d / t : 0 }' "$1"; }
FULL='^prof_qsort;.*;main;.*qsort[^;]*;.*;cmp;hot_spin$'
# full_in NAME FOLDED LEAF FULL_RE: passes when 20 samples or more end at LEAF and 90% of them have the whole stack FULL_RE
full_in() {
	_h=$(fsum "$2" ";$3\$")
	_f=$(fsum "$2" "$4")
	awk -v f="$_f" -v h="$_h" 'BEGIN { exit !(h >= 20 && f >= 0.9 * h) }' &&
		t_pass "$1 in $_f of $_h $3 samples" ||
		t_fail "$1" "$_f of $_h $3 samples: $(sort -k2 -nr "$2" | head -c 400)"
}
# stacks_in NAME CFI DWARF LEAF [DETAIL]: passes when each of CFI's stacks ending at LEAF with 5% of
# its LEAF samples or more is one of DWARF's (same frames)
stacks_in() {
	_h=$(fsum "$2" ";$4\$")
	_m=0 _first=
	while read -r _s; do
		[ -n "$_s" ] || continue
		grep -qF -- "$_s " "$3" || { _m=$((_m + 1)); _first=${_first:-$_s}; echo "  cfi only: $_s" >&2; }
	done <<EOF
$(awk -v h="$_h" -v re=";$4 [0-9]+\$" '$0 ~ re && $NF >= 0.05 * h { sub(/ [0-9]+$/, ""); print }' "$2")
EOF
	[ "$_m" = 0 ] && t_pass "$1" || t_fail "$1" "$_m are not (first: $_first $(awk -v s="$_first" 'substr($0, 1, length(s) + 1) == s " " { print $NF }' "$2") of $_h)${5:+; $5}"
}
# gated NAME "MODES" CMD...: starts CMD, a workload that prints "ready PID" and waits for SIGUSR1,
# profiles it with -p in each of MODES at once (-v -j, into $T_TMP/NAME<mode>.json and .err) from
# before it opens the gate to its exit; then its output is in $T_TMP/NAME.out, each mode's folded
# stacks in $T_TMP/NAME<mode>.folded and exit code in G_RC_<mode>.  1: it did not start.
gated() {
	_n=$1 _ms=$2
	shift 2
	"$@" > "$T_TMP/$_n.out" &
	_bg=$!
	T_CLEANUP="kill $_bg 2>/dev/null"
	t_wait_for "$T_TMP/$_n.out" ready || return 1
	_pid=$(awk '{ print $2; exit }' "$T_TMP/$_n.out")
	for _m in $_ms; do
		: > "$T_TMP/$_n$_m.err"
		"$KSIGHT" profile -p "$_pid" -F $HZ --call-graph $_m -v -j -o "$T_TMP/$_n$_m.json" 2> "$T_TMP/$_n$_m.err" &
		eval "_p_$_m=\$!"
		t_wait_for "$T_TMP/$_n$_m.err" tracing || return 1
	done
	kill -USR1 "$_bg"
	wait "$_bg"
	for _m in $_ms; do
		eval "wait \$_p_$_m; G_RC_$_m=\$?"
		folded "$T_TMP/$_n$_m.json" > "$T_TMP/$_n$_m.folded"
	done
}

# --- the three methods on one run: cfi, dwarf and fp profile the same process at once, from
# before it spins (-g: it waits for SIGUSR1) to its exit (-p), so each one's samples are the
# workload's CPU time times HZ.  A second try when cfi's count is off (a loaded machine: see
# test_profile's dwarf run).
run3() {
	gated q "cfi dwarf fp" "$W" 4 -g || return 1
	want=$(awk '/^cpu/ { printf "%.0f\n", $2 / 1e9 * '$HZ' }' "$T_TMP/q.out")
	total=$(fsum "$T_TMP/qcfi.folded" '.')
	awk -v n="$total" -v w="$want" 'BEGIN { d = n - w; if (d < 0) d = -d; exit !(w > 0 && d <= 0.2 * w) }'
}
run3 || [ "${KSIGHT_ACCEL:-}" = tcg ] || run3
t_eq "cfi: exit 0 at the process's exit" "0" "$G_RC_cfi"
total=$(fsum "$T_TMP/qcfi.folded" '.')
hot=$(fsum "$T_TMP/qcfi.folded" ';hot_spin$')
full=$(fsum "$T_TMP/qcfi.folded" "$FULL")
if [ "${KSIGHT_ACCEL:-}" = tcg ]; then
	t_skip "cfi: sample count ($total, HZ x CPU time $want)" "emulated CPU (qemu TCG): the host checks the rate"
else
	awk -v n="$total" -v w="$want" 'BEGIN { d = n - w; if (d < 0) d = -d; exit !(w > 0 && d <= 0.2 * w) }' &&
		t_pass "cfi: $total samples within 20% of HZ x the workload's CPU time ($want)" ||
		t_fail "cfi: sample count" "$total samples, want $want +- 20%"
fi
awk -v h="$hot" -v n="$total" 'BEGIN { exit !(h >= 20 && h > 0.5 * n) }' &&
	t_pass "cfi: most samples on hot_spin ($hot of $total)" ||
	t_fail "cfi: most samples on hot_spin" "$hot of $total"
awk -v f="$full" -v h="$hot" 'BEGIN { exit !(h > 0 && f >= 0.9 * h) }' &&
	t_pass "cfi: main -> qsort -> cmp -> hot_spin in $full of $hot hot_spin samples" ||
	t_fail "cfi: full stacks" "$full of $hot: $(sort -k2 -nr "$T_TMP/qcfi.folded" | head -c 400)"
# every walk reached _start's frame (CFI says its return address is undefined) but those of the
# samples before the process's tables were in, and the few in the kernel's entry/exit code paths
j=$T_TMP/qcfi.json
t_eq "cfi: one walk a sample" "$(jq '.samples' "$j")" "$(jq '.unwind.cfi.walks' "$j")"
t_eq "cfi: no unsupported rule, no depth cap" "0 0" "$(jq -r '.unwind.cfi.stops | "\(.unsupported) \(.depth_cap)"' "$j")"
# a read of the stack can fail (bpf_probe_read_user does not fault pages in): 0 on the host,
# 2 of 385 walks once in the 6.1 guest under TCG; at most 2% of the walks
fault=$(jq '.unwind.cfi.stops.read_fault' "$j")
awk -v f="$fault" -v n="$total" 'BEGIN { exit !(f <= 0.02 * n) }' &&
	t_pass "cfi: $fault of $total walks end at a read fault" ||
	t_fail "cfi: read faults" "$fault of $total walks"
# -p: the process's tables are loaded before the program is attached
t_eq "cfi: -p loads the tables before the first sample" "0" "$(jq '.unwind.cfi.stops.no_process' "$j")"
outer=$(jq '.unwind.cfi.stops.outermost' "$j")
awk -v o="$outer" -v n="$total" 'BEGIN { exit !(o >= 0.9 * n) }' &&
	t_pass "cfi: $outer of $total walks end at the outermost frame" ||
	t_fail "cfi: walks to the end" "$outer of $total: $(jq -c '.unwind.cfi' "$j")"
t_eq "cfi: nothing lost" "0" "$(jq '[.lost[]] | add' "$j")"
t_eq "cfi: every module's table loaded" "0 0" "$(jq -r '.unwind.cfi | "\(.modules_fp) \(.rows_dropped)"' "$j")"

# --- against dwarf mode, on the same samples' leaf: the stacks of hot_spin are the same
# frames (the most frequent one identical), as deep on average within a frame
dhot=$(fsum "$T_TMP/qdwarf.folded" ';hot_spin$')
dfull=$(fsum "$T_TMP/qdwarf.folded" "$FULL")
awk -v f="$dfull" -v h="$dhot" 'BEGIN { exit !(h > 0 && f >= 0.9 * h) }' &&
	t_pass "dwarf, same run: full stacks in $dfull of $dhot hot_spin samples" ||
	t_fail "dwarf, same run: full stacks" "$dfull of $dhot"
cd_=$(fdepth "$T_TMP/qcfi.folded" ';hot_spin$')
dd_=$(fdepth "$T_TMP/qdwarf.folded" ';hot_spin$')
awk -v a="$cd_" -v b="$dd_" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 5 && d <= 1) }' &&
	t_pass "cfi vs dwarf: hot_spin stacks $cd_ vs $dd_ frames deep" ||
	t_fail "cfi vs dwarf: depth" "cfi $cd_, dwarf $dd_"
# the stacks by share: each of cfi's stacks of hot_spin with 5% of the samples or more is one of dwarf's
stacks_in "cfi vs dwarf: cfi's main hot_spin stacks are dwarf's too" "$T_TMP/qcfi.folded" "$T_TMP/qdwarf.folded" hot_spin \
	"cfi stops: $(jq -c '.unwind.cfi.stops' "$j")"

# --- fp mode on the same run cannot pass through Debian's libc (no frame pointers): the reason for cfi
fhot=$(fsum "$T_TMP/qfp.folded" ';hot_spin$')
ffull=$(fsum "$T_TMP/qfp.folded" "$FULL")
awk -v f="$ffull" -v h="$fhot" 'BEGIN { exit !(h > 0 && f < 0.1 * h) }' &&
	t_pass "fp, same run: full stacks in only $ffull of $fhot hot_spin samples" ||
	t_skip "fp, same run" "$ffull of $fhot hot_spin samples have full stacks: this libc keeps frame pointers"

# --- -v says what the walks did
t_ok "cfi: -v gives the walks' stops" grep -q "cfi: .* walks, .* frames each" "$T_TMP/qcfi.err"

# --- a small budget (1.5 MiB: 24k rows, libc has 28k): the tables do not all fit; the modules left out are walked by frame
# pointers and said so (-v, JSON), nothing fails
q_start_plain() {
	t_name q
	Q_OUT=$T_NAME
	"$W" 30 > "$Q_OUT" &
	Q_BG=$!
	T_CLEANUP="kill $Q_BG 2>/dev/null"
	t_wait_for "$Q_OUT" ready || return 1
	Q_PID=$(awk '{ print $2; exit }' "$Q_OUT")
}
q_start_plain || t_fail "small budget: workload" "did not start"
"$KSIGHT" profile -p "$Q_PID" -F $HZ -d 1 --call-graph cfi --max-memory 1536K -j -o "$T_TMP/small.json" 2> "$T_TMP/small.err"
rc=$?
kill "$Q_BG" 2>/dev/null; wait "$Q_BG" 2>/dev/null
t_eq "small budget: exit 0" "0" "$rc"
fp=$(jq '.unwind.cfi.modules_fp' "$T_TMP/small.json")
if [ "${fp:-0}" -gt 0 ]; then
	t_ok "small budget: the modules walked by frame pointers are said" grep -q "did not fit" "$T_TMP/small.err"
	t_eq "small budget: rows dropped counted" "true" "$(jq '.unwind.cfi.rows_dropped > 0' "$T_TMP/small.json")"
else
	t_skip "small budget" "every table fit in $(jq '.unwind.cfi.rows_capacity' "$T_TMP/small.json") rows"
fi

# --- the cache of compiled tables (by build-id, in KSIGHT_DEBUG_CACHE): a first run on an empty
# cache compiles every table and writes it, a second run on the same process reads them back
# (libc's at least), and its walks are as full
q_start_plain || t_fail "table cache: workload" "did not start"
for n in 1 2; do
	KSIGHT_DEBUG_CACHE=$T_TMP/cache "$KSIGHT" profile -p "$Q_PID" -F $HZ -d 2 --call-graph cfi -v -j \
		-o "$T_TMP/cache$n.json" 2> "$T_TMP/cache$n.err"
	t_eq "table cache: run $n exits 0" "0" "$?"
done
kill "$Q_BG" 2>/dev/null; wait "$Q_BG" 2>/dev/null
t_eq "table cache: the first run on an empty cache reads none" "0" "$(jq '.unwind.cfi.modules_cached' "$T_TMP/cache1.json")"
ncfi=$(find "$T_TMP/cache" -name '*.cfi' -type f -perm 600 | wc -l)
t_ok "table cache: the first run writes its tables ($ncfi entries, 0600)" [ "$ncfi" -ge 1 ]
c2=$(jq '.unwind.cfi | "\(.modules_cached) of \(.modules), \(.table_ms) ms"' -r "$T_TMP/cache2.json")
t_eq "table cache: the second run reads tables from it ($c2)" "true" "$(jq '.unwind.cfi.modules_cached >= 1' "$T_TMP/cache2.json")"
t_ok "table cache: -v says how many came from the cache" grep -q "modules ([1-9][0-9]* from the cache" "$T_TMP/cache2.err"
folded "$T_TMP/cache2.json" > "$T_TMP/cache2.folded"
full_in "table cache: full stacks from cached tables" "$T_TMP/cache2.folded" hot_spin "$FULL"

# --- past the tables' load: -p reads the process's tables before it dlopens a library (no frame
# pointers) and spins there, and in the vDSO's clock_gettime: a walk that meets the library asks
# for the maps again (at most once a second), and the vDSO has a table of its own
if gated dl cfi "$WORKLOADS/prof_dlopen" "$WORKLOADS/libprofdl.so" 3; then
	t_eq "dlopen: exit 0" "0" "$G_RC_cfi"
	full_in "dlopen: main -> run_lib -> dl_outer -> dl_hot, the library loaded late," "$T_TMP/dlcfi.folded" dl_hot \
		';main;run_lib;dl_outer;dl_hot$'
	t_eq "dlopen: the maps read again, counted" "true" "$(jq '.unwind.cfi.maps_reread >= 1' "$T_TMP/dlcfi.json")"
	# the vDSO's own leaf frames are named by its symbols (__vdso_clock_gettime) or [vdso]
	vd=$(fsum "$T_TMP/dlcfi.folded" 'vdso[^;]*$')
	# (self_spin reads the clock too: main -> self_spin -> now_ns -> clock_gettime)
	vdfull=$(fsum "$T_TMP/dlcfi.folded" ';main;(vdso_spin|self_spin;now_ns);clock_gettime;.*vdso[^;]*$')
	if [ "$vd" -lt 20 ]; then
		t_skip "vdso: full stacks from the vDSO" "$vd samples there: clock_gettime is a syscall with clock source $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
	else
		awk -v f="$vdfull" -v h="$vd" 'BEGIN { exit !(f >= 0.9 * h) }' &&
			t_pass "vdso: main -> ... -> clock_gettime -> the vDSO in $vdfull of $vd samples there" ||
			t_fail "vdso: full stacks from the vDSO" "$vdfull of $vd: $(sort -k2 -nr "$T_TMP/dlcfi.folded" | head -c 400)"
	fi
else
	t_fail "dlopen: workload" "did not start"
fi

# --- through JIT code: prof_jit's generated jit_entry (anonymous memory, no CFI, a frame
# pointer, named in /tmp/perf-PID.map) calls jit_hot; the walk crosses it by its frame pointer
if gated jit cfi "$WORKLOADS/prof_jit" 2; then
	t_eq "jit: exit 0" "0" "$G_RC_cfi"
	jh=$(fsum "$T_TMP/jitcfi.folded" ';jit_hot$')
	jfull=$(fsum "$T_TMP/jitcfi.folded" ';_start;.*;main;jit_entry;jit_hot$')
	awk -v f="$jfull" -v h="$jh" 'BEGIN { exit !(h >= 20 && f >= 0.9 * h) }' &&
		t_pass "jit: _start -> main -> jit_entry (JIT) -> jit_hot in $jfull of $jh jit_hot samples" ||
		t_fail "jit: full stacks through the JIT frame" "$jfull of $jh: $(sort -k2 -nr "$T_TMP/jitcfi.folded" | head -c 400)"
	t_eq "jit: the generated code is a jit frame, named from the perf map" "jit" \
		"$(jq -r '[.stacks[].frames[] | select(.name == "jit_entry") | .kind] | unique | join(",")' "$T_TMP/jitcfi.json")"
	t_eq "jit: its frames counted" "true" "$(jq '.unwind.cfi.unmapped_frames > 0' "$T_TMP/jitcfi.json")"
else
	t_fail "jit: workload" "did not start"
fi

# --- through a signal frame: prof_signal's SIGPROF handler (on_prof -> sig_hot) takes most of its
# CPU time, interrupting main -> spin_outer -> spin_loop; at the handler's return address (libc's
# restorer, whose CFI reads the interrupted registers from the ucontext) the walk goes on into
# the interrupted code.  The restorer is one frame, named at its own address as libdw does:
# __restore_rt where libc's symbols are at hand (libc6-dbg), else whatever dwarf mode names it.
# dwarf mode on the same run gives the same stacks.
if gated sig "cfi dwarf" "$WORKLOADS/prof_signal" 3; then
	t_eq "signal: exit 0" "0" "$G_RC_cfi"
	SFULL='^prof_signal;_start;.*;main;spin_outer;spin_loop;[^;]+;on_prof;sig_hot$'
	full_in "signal: _start -> main -> spin_outer -> spin_loop -> (restorer) -> on_prof -> sig_hot" \
		"$T_TMP/sigcfi.folded" sig_hot "$SFULL"
	sh_=$(fsum "$T_TMP/sigcfi.folded" ';sig_hot$')
	t_eq "signal: the signal frames crossed counted ($(jq '.unwind.cfi.signal_frames' "$T_TMP/sigcfi.json") for $sh_ sig_hot samples)" \
		"true" "$(jq --argjson h "$sh_" '.unwind.cfi.signal_frames >= 0.9 * $h' "$T_TMP/sigcfi.json")"
	t_eq "signal: no unsupported rule" "0" "$(jq '.unwind.cfi.stops.unsupported' "$T_TMP/sigcfi.json")"
	t_ok "signal: -v counts the signal frames" grep -q "[1-9][0-9]* signal frames crossed" "$T_TMP/sigcfi.err"
	# the restorer's name: the frame before on_prof, the same in both modes
	rname() { jq -r '.stacks[].frames | map(.name) | . as $f | range(1; length) | select($f[.] == "on_prof") | $f[. - 1]' "$1" | sort -u | paste -sd,; }
	rc_=$(rname "$T_TMP/sigcfi.json")
	rd_=$(rname "$T_TMP/sigdwarf.json")
	t_eq "signal: the restorer's frame named as dwarf mode names it ($rc_)" "$rd_" "$rc_"
	if [ "$rd_" = __restore_rt ]; then
		t_pass "signal: the restorer named __restore_rt (libc's symbols at hand)"
	else
		t_skip "signal: the restorer named __restore_rt" "dwarf mode names it '$rd_' here: libc's .symtab is not at hand (libc6-dbg)"
	fi
	full_in "signal, dwarf on the same run: the same full stacks" "$T_TMP/sigdwarf.folded" sig_hot "$SFULL"
	stacks_in "signal: cfi's main sig_hot stacks are dwarf's too" "$T_TMP/sigcfi.folded" "$T_TMP/sigdwarf.folded" sig_hot
else
	t_fail "signal: workload" "did not start"
fi

# --- the fallback for kernels before 6.1, whose perf_event programs may not use a hash map
# without preallocation: the probe turned off (KSIGHT_FEATURES_OFF), counts and cfi_stacks are
# preallocated, and the walks are as whole
export KSIGHT_FEATURES_OFF=dyn_hash
if gated pre "cfi" "$W" 2 -g; then
	unset KSIGHT_FEATURES_OFF
	t_eq "prealloc fallback: exit 0" "0" "$G_RC_cfi"
	t_eq "prealloc fallback: counts and cfi_stacks preallocated" "true true" \
		"$(jq -r '[.maps.by_map[] | select(.name == "counts" or .name == "cfi_stacks") | .preallocated] | map(tostring) | join(" ")' "$T_TMP/precfi.json")"
	full_in "prealloc fallback: main -> qsort -> cmp -> hot_spin" "$T_TMP/precfi.folded" hot_spin "$FULL"
	t_eq "prealloc fallback: nothing lost" "0" "$(jq '[.lost[]] | add' "$T_TMP/precfi.json")"
else
	unset KSIGHT_FEATURES_OFF
	t_fail "prealloc fallback: workload" "did not start"
fi
# and without the override, where the kernel allows it (6.1+), they are not
if [ "$(jq -r '[.maps.by_map[] | select(.name == "counts" or .name == "cfi_stacks") | .preallocated] | map(tostring) | join(" ")' "$T_TMP/qcfi.json")" = "false false" ]; then
	t_pass "cfi: counts and cfi_stacks allocated on demand"
else
	t_skip "cfi: counts and cfi_stacks allocated on demand" "the kernel refused a hash without preallocation in a perf_event program (before 6.1)"
fi

# --- bad combinations: one line, exit 2
"$KSIGHT" profile --call-graph cfi --kernel-only -d 1 2> "$T_TMP/bad"; t_eq "cfi --kernel-only: exit 2" "2 1" "$? $(wc -l < "$T_TMP/bad")"
exit $T_FAILED
