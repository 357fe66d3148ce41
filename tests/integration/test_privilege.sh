# Integration: every collector as a non-root user with CAP_BPF + CAP_PERFMON works, or fails naming what is missing; doctor says so.
. tests/lib.sh
need_root privilege

for tool in useradd userdel setpriv jq; do
	if ! command -v $tool >/dev/null 2>&1; then
		t_skip "privilege" "no $tool"
		exit 0
	fi
done
if ! setpriv --help 2>&1 | grep -q -- --ambient-caps; then
	t_skip "privilege" "setpriv has no --ambient-caps"
	exit 0
fi

U=ksightpriv$$
useradd -M -U -s /bin/sh "$U" 2>"$T_TMP/useradd.err" || {
	t_skip "privilege" "useradd failed: $(head -1 "$T_TMP/useradd.err")"
	exit 0
}
T_CLEANUP='kill $BUSY_PID 2>/dev/null; wait $BUSY_PID 2>/dev/null; userdel "$U" 2>/dev/null; rm -rf "$PRIV_DIR"'
# the user must reach the binary and the workloads: a directory of its own, outside root's 0700 T_TMP
PRIV_DIR=$(mktemp -d /var/tmp/ksight-priv.XXXXXX)
chmod 755 "$PRIV_DIR"
cp "$KSIGHT" "$PRIV_DIR/ksight"
K=$PRIV_DIR/ksight

# as_user CAPS CMD...: CMD as $U with exactly CAPS (e.g. +bpf,+perfmon) effective
as_user() {
	_caps=$1; shift
	setpriv --reuid "$U" --regid "$U" --init-groups --inh-caps "$_caps" --ambient-caps "$_caps" "$@"
}

# Background activity for every collector: syscalls, sleeps and wakeups, direct I/O to the
# disk, page faults, TCP connections over loopback.
PORT=$((20000 + $$ % 20000))
busy() {
	while :; do
		dd if=/dev/zero of="$PRIV_DIR/io" bs=4k count=32 oflag=direct 2>/dev/null
		"$WORKLOADS/tcpload" -s 127.0.0.1 $PORT >/dev/null 2>&1 &
		_s=$!
		sleep 0.05
		"$WORKLOADS/tcpload" -c 127.0.0.1 $PORT -n 65536 >/dev/null 2>&1
		kill $_s 2>/dev/null
		wait $_s 2>/dev/null
		sleep 0.05
	done
}
busy &
BUSY_PID=$!

# Args of a short run of each collector that has rows whenever anything happens.
COLLECTORS='
syscalls|--by syscall
runqlat|
offcpu|
biolat|
mem|--by pid
tcp|--by flow
'

# run_one CAPS NAME ARGS: one run of collector NAME as $U; sets R_RC, R_ROWS, R_OUT, R_ERR
run_one() {
	R_OUT=$T_TMP/$2.$(echo "$1" | tr -dc a-z).json
	R_ERR=$R_OUT.err
	# shellcheck disable=SC2086
	as_user "$1" "$K" "$2" -j -d 1.5 -n 0 $3 >"$R_OUT" 2>"$R_ERR"
	R_RC=$?
	R_ROWS=$(jq -s '[.[] | select(.rows) | .rows | length] | add // 0' "$R_OUT" 2>/dev/null)
}

# works_or_says CAPS NAME ARGS MUST: a report with rows and exit 0, or (unless MUST is
# "must") a non-zero exit whose error names a capability, sysctl or tracefs mount;
# never "not in this kernel", never an empty success
works_or_says() {
	run_one "$1" "$2" "$3"
	_what="$2 with $1"
	if grep -q 'not in this kernel' "$R_ERR"; then
		t_fail "$_what: says what is missing" "blames the kernel: $(grep 'not in this kernel' "$R_ERR" | head -1)"
		return
	fi
	if [ "$R_RC" = 0 ]; then
		t_eq "$_what: exit 0 with rows" "true" "$([ "${R_ROWS:-0}" -gt 0 ] && echo true || echo "false (no rows)")"
	elif [ "$4" = must ]; then
		t_fail "$_what: works" "exit $R_RC: $(grep error "$R_ERR" | head -1)"
	else
		t_ok "$_what: exit $R_RC names the missing capability, sysctl or mount" \
			grep -Eq 'error: .*(CAP_[A-Z_]+|sysctl|tracefs)' "$R_ERR"
		t_eq "$_what: one error line" 1 "$(grep -c 'error:' "$R_ERR")"
	fi
}

# 1. CAP_BPF + CAP_PERFMON only (tracefs as the system has it: root's, mode 0700, or not mounted).
# Collectors on tp_btf/raw_tp need nothing more; those with classic tracepoints need tracefs.
while IFS='|' read -r col args; do
	[ -n "$col" ] || continue
	case $col in
	mem) works_or_says +bpf,+perfmon "$col" "$args" may ;;
	*) works_or_says +bpf,+perfmon "$col" "$args" must ;;
	esac
done <<EOF
$COLLECTORS
EOF

# 1b. `ksight run`: several collectors in one process with the same two capabilities, one
# report each with rows (runqlat, offcpu and syscalls need no tracefs)
as_user +bpf,+perfmon "$K" run syscalls,runqlat,offcpu -j -d 1.5 -n 0 >"$T_TMP/run.json" 2>"$T_TMP/run.err"
t_eq "run syscalls,runqlat,offcpu with +bpf,+perfmon: exit 0" 0 "$?"
t_eq "run with +bpf,+perfmon: a report with rows from each" "offcpu runqlat syscalls" \
	"$(jq -r -s '[.[] | select((.rows | length) > 0) | .collector] | unique | join(" ")' "$T_TMP/run.json" 2>/dev/null)"

# 2. The documented extra: CAP_DAC_READ_SEARCH lets classic tracepoints read their ids.
tfs=$(awk '$3 == "tracefs" {print $2; exit}' /proc/mounts)
if [ -n "$tfs" ]; then
	while IFS='|' read -r col args; do
		[ -n "$col" ] || continue
		works_or_says +bpf,+perfmon,+dac_read_search "$col" "$args" must
	done <<EOF
$COLLECTORS
EOF
else
	t_skip "collectors with CAP_DAC_READ_SEARCH" "tracefs is not mounted here (and the user may not mount it)"
fi

# 3. tracefs not mounted at all, in a private mount namespace: the user cannot mount it
if unshare -m true 2>/dev/null; then
	unshare -m sh -c '
		mount --make-rprivate / || exit 4
		for m in $(awk "\$3 == \"tracefs\" {print \$2}" /proc/mounts); do umount "$m" || exit 3; done
		setpriv --reuid "$1" --regid "$1" --init-groups --inh-caps +bpf,+perfmon --ambient-caps +bpf,+perfmon \
			"$2" mem -j -d 0.5 >"$3.mem" 2>"$3.mem.err"
		echo $? >"$3.mem.rc"
		setpriv --reuid "$1" --regid "$1" --init-groups --inh-caps +bpf,+perfmon --ambient-caps +bpf,+perfmon \
			"$2" biolat -j -d 0.5 >"$3.bio" 2>"$3.bio.err"
		echo $? >"$3.bio.rc"
		setpriv --reuid "$1" --regid "$1" --init-groups --inh-caps +bpf,+perfmon --ambient-caps +bpf,+perfmon \
			"$2" doctor -j >"$3.doc" 2>/dev/null' sh "$U" "$K" "$T_TMP/nomount"
	case $? in
	3 | 4) t_skip "tracefs not mounted" "cannot unmount tracefs in a private namespace" ;;
	*)
		t_eq "no tracefs: biolat runs (tp_btf needs none)" 0 "$(cat "$T_TMP/nomount.bio.rc")"
		if [ "$(cat "$T_TMP/nomount.mem.rc")" = 0 ]; then
			t_pass "no tracefs: mem runs"
		else
			t_ok "no tracefs: mem names the mount and CAP_SYS_ADMIN" \
				grep -q 'error: mem: .*tracefs is not mounted.*CAP_SYS_ADMIN' "$T_TMP/nomount.mem.err"
		fi
		t_eq "no tracefs: doctor says mounting needs CAP_SYS_ADMIN" "MISSING not mounted; mounting it needs CAP_SYS_ADMIN" \
			"$(jq -r '.checks[] | select(.name == "tracefs") | "\(.status) \(.value)"' "$T_TMP/nomount.doc")"
		;;
	esac
else
	t_skip "tracefs not mounted" "no unshare -m"
fi

# 4. doctor as the user names the missing pieces and suggests no kernel it already has
D=$T_TMP/doctor.user.json
as_user +bpf,+perfmon "$K" doctor -j >"$D" 2>/dev/null
t_eq "doctor (bpf, perfmon): exit 0, tracing possible" "0 true" "$? $(jq -r .tracing_possible "$D")"
t_eq "doctor (bpf, perfmon): capabilities OK" OK "$(jq -r '.checks[] | select(.name == "capabilities") | .status' "$D")"
t_eq "doctor (bpf, perfmon): capabilities lists the five" true \
	"$(jq '.checks[] | select(.name == "capabilities") | .value | test("CAP_BPF yes, CAP_PERFMON yes, CAP_SYS_ADMIN no, CAP_DAC_READ_SEARCH no, CAP_SYS_RESOURCE no")' "$D")"
if [ -n "$tfs" ]; then
	t_eq "doctor (bpf, perfmon): tracefs MISSING" MISSING "$(jq -r '.checks[] | select(.name == "tracefs") | .status' "$D")"
	t_eq "doctor (bpf, perfmon): tracefs names mode and uid" true \
		"$(jq --arg u "$(id -u "$U")" '.checks[] | select(.name == "tracefs") | .value | test("mode 0[0-7]+, owner .*not readable by uid " + $u)' "$D")"
	t_eq "doctor (bpf, perfmon): tracefs fix names CAP_DAC_READ_SEARCH and gid=" true \
		"$(jq '.checks[] | select(.name == "tracefs") | .fix | test("CAP_DAC_READ_SEARCH.*gid=")' "$D")"
	t_eq "doctor (bpf, perfmon): the summary says classic tracepoints are out" true \
		"$(jq '.summary | test("not classic tracepoints")' "$D")"
	as_user +bpf,+perfmon,+dac_read_search "$K" doctor -j >"$D.dac" 2>/dev/null
	t_eq "doctor (+dac_read_search): tracefs and tracepoint OK" "OK OK" \
		"$(jq -r '[.checks[] | select(.name == "tracefs" or .name == "tracepoint") | .status] | join(" ")' "$D.dac")"
fi
# a fix that says to use another kernel names only options this kernel's config lacks
cfg=$(jq -r '.system.kernel.config.source // empty' "$D")
if [ -n "$cfg" ]; then
	bad=
	for o in $(jq -r '.checks[] | select(.fix != null) | select(.fix | test("use a kernel|use one built")) | .fix' "$D" |
		grep -o 'CONFIG_[A-Z0-9_]*' | sort -u); do
		v=$(jq -r --arg o "$o" '.system.kernel.config[$o] // "?"' "$D")
		[ "$v" = y ] || [ "$v" = m ] && bad="$bad $o"
	done
	t_eq "doctor suggests no kernel rebuild for options $cfg has" "" "$bad"
else
	t_skip "doctor and the kernel config" "no readable kernel config"
fi
exit $T_FAILED
