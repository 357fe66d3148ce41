# Integration: `ksight doctor` agrees with what the kernel itself says, mounts tracefs, and exits by whether tracing is possible.
. tests/lib.sh
need_root doctor

# doctor's probe programs (probe__*) that no process holds: a leaked program or link keeps one alive
leaked_probes() {
	bpftool -j prog show 2>/dev/null |
		jq -r '.[] | select((.pids // []) | length == 0) | select(.name // "" | startswith("probe__")) | .id'
}
J=$T_TMP/doctor.json
TXT=$T_TMP/doctor.txt

t0=$(date +%s%N)
"$KSIGHT" doctor >"$TXT" 2>"$T_TMP/err"
rc=$?
t1=$(date +%s%N)
t_eq "doctor exits 0 where tracing works" 0 "$rc"
"$KSIGHT" doctor -j >"$J" 2>>"$T_TMP/err"
t_eq "doctor -j exits 0" 0 "$?"
t_ok "doctor -j is one valid JSON document" jq -e 'type == "object"' "$J" >/dev/null
t_eq "json: tracing_possible" true "$(jq -r .tracing_possible "$J")"
t_eq "json: kernel is the running release" "$(uname -r)" "$(jq -r .kernel "$J")"
t_eq "json: every check has name, status, value, impact, fix" true \
	"$(jq '[.checks[] | has("name") and has("status") and has("value") and has("impact") and has("fix")] | all' "$J")"
t_eq "json: impact and fix given exactly when not OK" true \
	"$(jq '[.checks[] | (.status == "OK") == (.impact == null and .fix == null)] | all' "$J")"
t_eq "json: statuses are OK, WARN or MISSING" true \
	"$(jq '[.checks[].status | . == "OK" or . == "WARN" or . == "MISSING"] | all' "$J")"
t_eq "text and json list the same checks and statuses" \
	"$(jq -r '.checks[] | "\(.status) \(.name)"' "$J")" "$(awk 'NR > 2 && /^[A-Z]/ && NF > 1 {print $1, $2}' "$TXT")"

# status of check NAME in the JSON report
st() { jq -r --arg n "$1" '.checks[] | select(.name == $n) | .status' "$J"; }
val() { jq -r --arg n "$1" '.checks[] | select(.name == $n) | .value' "$J"; }

# expectations from the kernel's own files, not from a list of known machines
if [ -r /sys/kernel/btf/vmlinux ]; then want=OK; else want=MISSING; fi
t_eq "btf as /sys/kernel/btf/vmlinux says" "$want" "$(st btf)"
t_eq "tp_btf follows btf" "$want" "$(st tp_btf)"

# kernel_min: the running release against 5.15, as uname says it
kmaj=$(uname -r | cut -d. -f1)
kmin=$(uname -r | cut -d. -f2 | sed 's/[^0-9].*//')
if [ "$kmaj" -gt 5 ] || { [ "$kmaj" -eq 5 ] && [ "$kmin" -ge 15 ]; }; then want=OK; cmp=">="; else want=WARN; cmp="<"; fi
t_eq "kernel_min as uname -r says" "$want" "$(st kernel_min)"
t_eq "kernel_min value" "$kmaj.$kmin $cmp minimum 5.15" "$(val kernel_min)"
# biolat's BTF members, read from the kernel's BTF with bpftool
if [ -r /sys/kernel/btf/vmlinux ] && command -v bpftool >/dev/null; then
	btf=$(bpftool btf dump file /sys/kernel/btf/vmlinux format c 2>/dev/null)
	q=$(printf '%s\n' "$btf" | awk '/^struct request_queue \{/,/^\};/' | grep -c 'struct gendisk \*disk;')
	b=$(printf '%s\n' "$btf" | awk '/^struct bio \{/,/^\};/' | grep -c 'struct block_device \*bi_bdev;')
	if [ "$q" -ge 1 ] && [ "$b" -ge 1 ]; then want=""; else want=MISSING; fi
	t_eq "biolat_btf as the kernel's BTF says" "$want" "$(st biolat_btf)"
fi
tfs=$(awk '$3 == "tracefs" {print $2; exit}' /proc/mounts)
t_ok "tracefs mounted after doctor" test -n "$tfs"
if [ -d "$tfs/events/sched/sched_switch" ]; then want=OK; else want=MISSING; fi
t_eq "raw_tp as tracefs events say" "$want" "$(st raw_tp)"
t_eq "tracepoint as tracefs events say" "$want" "$(st tracepoint)"
t_eq "tracefs check names the mount point" "mounted at $tfs" "$(val tracefs)"
# kprobes exist exactly when tracefs offers kprobe_events
if [ -e "$tfs/kprobe_events" ]; then want=OK; else want=MISSING; fi
t_eq "kprobe as $tfs/kprobe_events says" "$want" "$(st kprobe)"
if [ "$want" = MISSING ]; then
	t_ok "kprobe MISSING has a fix line" sh -c "grep -A2 '^MISSING  *kprobe ' '$TXT' | grep -q '^ *fix: '"
	t_ok "kprobe -v detail names the failed step and errno" sh -c \
		"'$KSIGHT' doctor -v | grep -A3 '^MISSING  *kprobe ' | grep -q \"detail: probe step 'attach' failed: .*(E[A-Z]*)\""
fi
# bpftrace probes BPF trampolines independently (its "kfunc" feature)
if command -v bpftrace >/dev/null 2>&1; then
	kf=$(bpftrace --info 2>&1 | awk '$1 == "kfunc:" {print $2}')
	case $kf in
	yes) t_eq "fentry agrees with bpftrace's kfunc probe" OK "$(st fentry)" ;;
	no) t_eq "fentry agrees with bpftrace's kfunc probe" MISSING "$(st fentry)" ;;
	*) t_skip "fentry cross-check" "bpftrace --info has no kfunc line" ;;
	esac
else
	t_skip "fentry cross-check" "no bpftrace"
fi
if [ "$(st fentry)" = MISSING ]; then
	t_ok "fentry MISSING has a fix line" sh -c "grep -A2 '^MISSING  *fentry ' '$TXT' | grep -q '^ *fix: '"
fi
t_eq "capabilities as root" OK "$(st capabilities)"
t_eq "ringbuf" OK "$(st ringbuf)"

# facts against the files they come from
t_eq "perf_event_paranoid value" "$(cat /proc/sys/kernel/perf_event_paranoid)" "$(val perf_event_paranoid | cut -d' ' -f1)"
t_eq "kptr_restrict value" "$(cat /proc/sys/kernel/kptr_restrict)" "$(val kptr_restrict | cut -d' ' -f1)"
t_eq "clocksource value" "$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)" \
	"$(jq -r .system.clocksource.current "$J")"
t_eq "online cpus" "$(grep -c '^processor' /proc/cpuinfo)" "$(jq -r .system.cpu.online "$J")"
t_eq "sockets" "$(cat /sys/devices/system/cpu/cpu[0-9]*/topology/physical_package_id | sort -u | wc -l | tr -d ' ')" \
	"$(jq -r .system.cpu.sockets "$J")"
if grep -q '^flags.* constant_tsc' /proc/cpuinfo; then want=true; else want=false; fi
t_eq "constant_tsc flag" "$want" "$(jq -r '.system.cpu.tsc.constant_tsc // false' "$J")"
v2=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/mounts)
v1=$(awk '$3 == "cgroup" {n++} END {print n + 0}' /proc/mounts)
if [ -n "$v2" ] && [ "$v1" -gt 0 ]; then want=hybrid
elif [ -n "$v2" ]; then want=v2
elif [ "$v1" -gt 0 ]; then want=v1
else want=none; fi
t_eq "cgroup mode" "$want" "$(jq -r .system.cgroup.mode "$J")"
t_eq "cgroup v1 mounts" "$v1" "$(jq -r '.system.cgroup.v1 | length' "$J")"
if ls /sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor >/dev/null 2>&1; then
	t_eq "governors" "$(cat /sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor | sort -u | tr '\n' ' ')" \
		"$(jq -r '.system.cpufreq.governors | sort | join(" ") + " "' "$J")"
else
	t_eq "no cpufreq is said" "WARN" "$(st cpufreq)"
fi

# tracefs absent: doctor mounts it for itself, says so, and leaves none behind (tested in a private mount namespace)
if command -v unshare >/dev/null 2>&1 && unshare -m true 2>/dev/null; then
	unshare -m sh -c '
		mount --make-rprivate / || exit 4
		for m in $(awk "\$3 == \"tracefs\" {print \$2}" /proc/mounts); do umount "$m" || exit 3; done
		"$1" doctor -j >"$2"
		rc=$?
		awk "\$3 == \"tracefs\"" /proc/mounts >"$2.mounts"
		exit $rc' sh "$KSIGHT" "$T_TMP/mount.json"
	t_eq "doctor exits 0 after mounting tracefs" 0 "$?"
	t_eq "doctor says it mounts tracefs for itself" "not mounted: ksight mounts it at /sys/kernel/tracing for itself while it runs" \
		"$(jq -r '.checks[] | select(.name == "tracefs") | .value' "$T_TMP/mount.json")"
	t_eq "no tracefs mount left behind in that namespace" "" "$(cat "$T_TMP/mount.json.mounts")"
	t_eq "tracepoint works on the fresh mount" "$(st tracepoint)" \
		"$(jq -r '.checks[] | select(.name == "tracepoint") | .status' "$T_TMP/mount.json")"
else
	t_skip "tracefs mounting" "no unshare -m"
fi

# an unprivileged user cannot trace: exit 1, and the report says why
if command -v setpriv >/dev/null 2>&1; then
	setpriv --reuid=65534 --regid=65534 --clear-groups "$KSIGHT" doctor -j >"$T_TMP/nobody.json" 2>/dev/null
	t_eq "unprivileged: exit 1" 1 "$?"
	t_eq "unprivileged: tracing_possible false" false "$(jq -r .tracing_possible "$T_TMP/nobody.json")"
	t_eq "unprivileged: capabilities MISSING" MISSING \
		"$(jq -r '.checks[] | select(.name == "capabilities") | .status' "$T_TMP/nobody.json")"
else
	t_skip "unprivileged run" "no setpriv"
fi

# usage
"$KSIGHT" doctor -h >"$T_TMP/help" 2>&1
t_eq "-h exits 0" 0 "$?"
t_ok "-h lists -j" grep -q -- '--json' "$T_TMP/help"
"$KSIGHT" doctor --bogus >/dev/null 2>&1
t_eq "unknown option exits 2" 2 "$?"
"$KSIGHT" doctor extra >/dev/null 2>&1
t_eq "extra argument exits 2" 2 "$?"
t_eq "nothing on stderr" "" "$(cat "$T_TMP/err")"

# fast: every probe loads and attaches, still well under a second
case $t0$t1 in
*[!0-9]*) t_skip "doctor is fast" "date has no %N" ;;
*)
	ms=$(((t1 - t0) / 1000000))
	echo "doctor took $ms ms"
	if [ "${KSIGHT_ACCEL:-}" = tcg ]; then
		t_skip "doctor is fast" "emulated CPU (qemu TCG): its timing is not the machine's"
	elif [ -n "${KSIGHT_SANITIZED:-}" ]; then
		t_skip "doctor is fast" "built with ASan/UBSan (make test-san): $ms ms is not the release build's"
	elif [ "$ms" -lt 1000 ]; then t_pass "doctor under 1 s ($ms ms)"; else t_fail "doctor under 1 s" "$ms ms"; fi
	;;
esac

# the kernel frees a closed program after a grace period: a real leak outlives the wait
i=0
while [ -n "$(leaked_probes)" ] && [ $i -lt 40 ]; do sleep 0.05; i=$((i + 1)); done
t_eq "no probe programs or links left behind" "" "$(leaked_probes)"
exit $T_FAILED
