# Integration: every collector as a non-root user with CAP_BPF + CAP_PERFMON works, or fails naming what is missing; doctor says so.
. tests/lib.sh
need_root privilege

t_priv_user privilege priv jq || exit 0
T_CLEANUP='kill $BUSY_PID 2>/dev/null; wait $BUSY_PID 2>/dev/null; userdel "$U" 2>/dev/null; rm -rf "$PRIV_DIR"'

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
wall|
net|--by stage
'

# run_one CAPS NAME ARGS: one run of collector NAME as $U; sets R_RC, R_ROWS, R_OUT, R_ERR
run_one() {
	R_OUT=$T_TMP/$2.$(echo "$1" | tr -dc a-z).json
	R_ERR=$R_OUT.err
	# shellcheck disable=SC2086
	t_as_user "$1" "$K" "$2" -j -d 1.5 -n 0 $3 >"$R_OUT" 2>"$R_ERR"
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
t_as_user +bpf,+perfmon "$K" run syscalls,runqlat,offcpu -j -d 1.5 -n 0 >"$T_TMP/run.json" 2>"$T_TMP/run.err"
t_eq "run syscalls,runqlat,offcpu with +bpf,+perfmon: exit 0" 0 "$?"
t_eq "run with +bpf,+perfmon: a report with rows from each" "offcpu runqlat syscalls" \
	"$(jq -r -s '[.[] | select((.rows | length) > 0) | .collector] | unique | join(" ")' "$T_TMP/run.json" 2>/dev/null)"

# 1b''. `top`: the live view on a pseudo-terminal (script(1) gives it one), -d ends it; a
# frame after the first drawn (#1 or later in the header: curses rewrites only what changed), exit 0
if command -v script >/dev/null 2>&1; then
	TERM=xterm t_as_user +bpf,+perfmon script -qec "$K top -d 1.3 -i 0.5" /dev/null >"$T_TMP/top.out" 2>&1
	_rc=$?
	# the screen as text: escape sequences become line breaks
	sed 's/\x1b\[[0-9;?]*[a-zA-Z]/\n/g' "$T_TMP/top.out" | tr -d '\r' >"$T_TMP/top.txt"
	t_eq "top with +bpf,+perfmon: exit 0, a tick's frame drawn" "0 true" \
		"$_rc $(grep -qaE '^#[1-9][0-9]* ' "$T_TMP/top.txt" && echo true || echo false)$([ $_rc = 0 ] || { echo; tail -c 600 "$T_TMP/top.txt"; })"
	t_eq "top with +bpf,+perfmon: no error, nothing lost" "0 0" \
		"$(grep -ac 'error:' "$T_TMP/top.txt") $(grep -acE '^#[12] .* lost [1-9]' "$T_TMP/top.txt")"
else
	t_skip "top with +bpf,+perfmon" "no script(1) for a pseudo-terminal"
fi

# 1b'''. record --collect: collectors inside a recording (no tracepoint of its own, so no
# tracefs), each one's reports read back by report as the user
RC_DIR=$PRIV_DIR/rc
mkdir "$RC_DIR" && chown "$U:$U" "$RC_DIR"
t_as_user +bpf,+perfmon "$K" record --collect syscalls,runqlat -d 1.2 -o "$RC_DIR/c.ksr" >/dev/null 2>"$T_TMP/rc.err"
_rc=$?
t_eq "record --collect syscalls,runqlat with +bpf,+perfmon: exit 0" 0 "$_rc$([ $_rc = 0 ] || { echo; tail -3 "$T_TMP/rc.err"; })"
t_as_user -all "$K" report "$RC_DIR/c.ksr" >"$T_TMP/rc.rep" 2>&1
t_eq "record --collect: report as the user shows both collectors" "0 2" \
	"$? $(grep -cE '^=== (syscalls|runqlat) ===' "$T_TMP/rc.rep")"

# 1c. record with no capability at all: refused in one error line that names what is missing
t_as_user -all "$K" record --collect syscalls -d 1 -o "$RC_DIR/none.ksr" >/dev/null 2>"$T_TMP/rn.err"
_rc=$?
t_eq "record --collect syscalls, no capability: fails in one error line naming CAP_BPF, no file" "fail 1 1 none" \
	"$([ $_rc = 0 ] && echo exit0 || echo fail) $(grep -c 'error:' "$T_TMP/rn.err") $(grep -c 'error: .*CAP_BPF' "$T_TMP/rn.err") $([ -e "$RC_DIR/none.ksr" ] && echo left || echo none)$(grep -q CAP_BPF "$T_TMP/rn.err" || { echo; cat "$T_TMP/rn.err"; })"

tfs=$(awk '$3 == "tracefs" {print $2; exit}' /proc/mounts)

# 1b'. tcp learns of its accept hooks (syscall events) from tracefs only: where this user cannot
# read it, the warning names tracefs and the fix, as doctor does, not the kernel's config.
# Section 1's run, with tracefs as the system has it, and one with root's 0700 tracefs: mounted
# in a mount namespace of its own, or the system's where one is mounted already (a second mount
# with other options fails; tracefs is 0700 unless mounted with a mode).
tcp_no_config_blame() {
	t_eq "$1: the warning does not blame CONFIG_FTRACE_SYSCALLS" 0 "$(grep -c CONFIG_FTRACE_SYSCALLS "$2")"
	t_ok "$1: the warning names tracefs and what fixes it" \
		grep -Eq 'warning: tcp: .*accept.*tracefs.*(CAP_DAC_READ_SEARCH|CAP_SYS_ADMIN)' "$2"
}
if [ -z "$tfs" ] || ! t_as_user +bpf,+perfmon test -r "$tfs/events" 2>/dev/null; then
	tcp_no_config_blame "tcp with +bpf,+perfmon (tracefs not readable)" "$T_TMP/tcp.bpfperfmon.json.err"
fi
if [ -n "$tfs" ] && t_as_user +bpf,+perfmon test -r "$tfs/events" 2>/dev/null; then
	t_skip "tcp with +bpf,+perfmon, tracefs 0700" "the system's tracefs at $tfs is readable by $U"
else
	unshare -m sh -c 'mountpoint -q /sys/kernel/tracing || mount -t tracefs -o mode=0700 nodev /sys/kernel/tracing &&
		exec setpriv --reuid "$1" --regid "$1" --init-groups --inh-caps +bpf,+perfmon --ambient-caps +bpf,+perfmon \
		"$2" tcp -j -d 0.3' sh "$U" "$K" >/dev/null 2>"$T_TMP/tcp0700.err"
	t_eq "tcp with +bpf,+perfmon, tracefs 0700: exit 0" 0 "$?"
	tcp_no_config_blame "tcp with +bpf,+perfmon, tracefs 0700" "$T_TMP/tcp0700.err"
fi

# 1c. The commands beyond the six collectors, with the same two capabilities.
# U_DIR: the user's own directory for what the commands write (a recording, a pprof).
U_DIR=$PRIV_DIR/u
mkdir "$U_DIR" && chown "$U:$U" "$U_DIR"
cp "$WORKLOADS/fl_calls" "$WORKLOADS/cpuhog" "$PRIV_DIR/"
before_new=$T_TMP/orphans.before
t_orphans >"$before_new"

# one_line_error NAME ERRFILE RE: exactly one error line, and it matches RE
one_line_error() {
	t_eq "$1: one error line" 1 "$(grep -c 'error:' "$2")"
	t_ok "$1: the error names what is missing" grep -Eq "error: .*($3)" "$2"
}

# record reads each event's format (and id) from tracefs, which is root's 0700 here: it
# fails naming tracefs and CAP_DAC_READ_SEARCH, exit 1 (not 2: the usage is right); with
# CAP_DAC_READ_SEARCH it records, and `report` reads the file as the same user, no capability.
R=$U_DIR/rec.ksr
t_as_user +bpf,+perfmon "$K" record -e sched:sched_switch -e raw_syscalls:sys_enter -d 1 -o "$R" \
	>"$T_TMP/rec.out" 2>"$T_TMP/rec.err"
rc=$?
if [ -n "$tfs" ] && ! t_as_user +bpf,+perfmon test -r "$tfs/events/sched/sched_switch/format" 2>/dev/null; then
	t_eq "record with +bpf,+perfmon (tracefs not readable): exit 1" 1 "$rc"
	one_line_error "record with +bpf,+perfmon" "$T_TMP/rec.err" "tracefs.*CAP_DAC_READ_SEARCH"
elif [ -z "$tfs" ]; then
	t_eq "record with +bpf,+perfmon (tracefs not mounted): exit 1" 1 "$rc"
	one_line_error "record with +bpf,+perfmon" "$T_TMP/rec.err" "tracefs.*CAP_SYS_ADMIN"
else
	t_eq "record with +bpf,+perfmon (tracefs readable): exit 0" 0 "$rc"
fi
if [ -n "$tfs" ]; then
	# a syscall workload of known count would do; any busy host has switches and syscalls
	t_as_user +bpf,+perfmon,+dac_read_search "$K" record -e sched:sched_switch -e raw_syscalls:sys_enter -d 1 -o "$R" \
		>"$T_TMP/rec.out" 2>"$T_TMP/rec.err"
	t_eq "record with +dac_read_search: exit 0" 0 "$?"
	t_as_user -all "$K" report -j "$R" >"$T_TMP/rep.json" 2>"$T_TMP/rep.err"
	t_eq "report of the user's recording, no capability: exit 0" 0 "$?"
	t_eq "report: both events in it" "raw_syscalls:sys_enter sched:sched_switch" \
		"$(jq -r .event "$T_TMP/rep.json" 2>/dev/null | sort -u | tr '\n' ' ' | sed 's/ $//')"
	# the first event triggers: the test is of the privileges, not of the trigger
	t_as_user +bpf,+perfmon,+dac_read_search "$K" record -e raw_syscalls:sys_enter --flight 4M \
		--trigger 'id >= 0' -d 1 -o "$U_DIR/flight.ksr" >"$T_TMP/fl.out" 2>"$T_TMP/fl.err"
	t_eq "record --flight with +dac_read_search: exit 0, one trigger" "0 1" \
		"$? $(sed -n 's/.*flight recorder: \([0-9]*\) trigger.*/\1/p' "$T_TMP/fl.err")"
fi

# profile: perf_event sampling takes CAP_PERFMON (system-wide, any perf_event_paranoid); samples
# of a CPU-bound workload in every call-graph mode.  Kernel frames show as [unknown] without
# CAP_SYSLOG (kptr_restrict): a warning, not a failure.
"$PRIV_DIR/cpuhog" -s 20 0 >"$T_TMP/hog.out" 2>&1 &
HOG=$!
for mode in fp dwarf cfi; do
	t_as_user +bpf,+perfmon "$K" profile --call-graph $mode -p $HOG -d 1.5 -o "$U_DIR/prof.$mode" 2>"$T_TMP/prof.err"
	t_eq "profile --call-graph $mode with +bpf,+perfmon: exit 0" 0 "$?"
	# any sample shows the privilege is enough: how many depends on the CPU the hog gets on a
	# loaded machine (9 in 1.5 s once, beside the sanitized build)
	t_eq "profile $mode: samples of the CPU-bound workload" true \
		"$([ "$(t_fsum "$U_DIR/prof.$mode" .)" -gt 0 ] && echo true || echo "false: $(t_fsum "$U_DIR/prof.$mode" .)")"
done
kill $HOG 2>/dev/null
wait $HOG 2>/dev/null

# the stack modes of offcpu, syscalls and biolat
for m in offcpu syscalls biolat; do
	t_as_user +bpf,+perfmon "$K" $m --stacks -d 1.5 -o "$U_DIR/$m.folded" 2>"$T_TMP/$m.st.err"
	_rc=$?
	# on a failure, what ksight said (a crash prints its stack: syscalls once exited 139 here)
	t_eq "$m --stacks with +bpf,+perfmon: exit 0 with stacks" "0 true" \
		"$_rc $([ -s "$U_DIR/$m.folded" ] && echo true || echo false)$([ $_rc = 0 ] || tail -c 1500 "$T_TMP/$m.st.err")"
done

# funclat: uprobes and USDT.  Linux 6.16 (commit ba677dbe77af, backported to the stable kernels)
# takes CAP_SYS_ADMIN again for uprobes; before it CAP_PERFMON was enough.  Either exactly N
# calls, or one error naming CAP_SYS_ADMIN and uprobes; with CAP_SYS_ADMIN, exactly N.
fl_run() {
	# emptied here: the words t_wait_for waits for must not come from the run before
	: >"$T_TMP/fl_calls.out"
	: >"$T_TMP/funclat.err"
	"$PRIV_DIR/fl_calls" 20 1000 >"$T_TMP/fl_calls.out" &
	_fp=$!
	t_wait_for "$T_TMP/fl_calls.out" ready
	# setpriv itself in the background, not as_user: $! must be the process that becomes
	# ksight, or SIGINT goes to a subshell and ksight is left running
	setpriv --reuid "$U" --regid "$U" --init-groups --inh-caps "$1" --ambient-caps "$1" \
		"$K" funclat -j -n 0 "$PRIV_DIR/fl_calls:fl_sleep" "$PRIV_DIR/fl_calls:ksight_test:tick" \
		>"$T_TMP/funclat.json" 2>"$T_TMP/funclat.err" &
	_kp=$!
	t_wait_for "$T_TMP/funclat.err" "tracing\|error"
	kill -USR1 $_fp
	t_wait_for "$T_TMP/fl_calls.out" done
	t_interrupt $_kp
	FL_RC=$?
	kill -USR1 $_fp 2>/dev/null
	wait $_fp 2>/dev/null
	FL_COUNTS=$(jq -r '[.rows[]? | .count] | map(tostring) | join(" ")' "$T_TMP/funclat.json" 2>/dev/null | tail -1)
}
fl_run +bpf,+perfmon
if grep -q 'error:' "$T_TMP/funclat.err"; then
	one_line_error "funclat with +bpf,+perfmon" "$T_TMP/funclat.err" "uprobe.*CAP_SYS_ADMIN"
	fl_run +bpf,+perfmon,+sys_admin
	t_eq "funclat with +sys_admin: 20 calls of fl_sleep, 20 USDT ticks" "20 20" "$FL_COUNTS"
	[ "$FL_COUNTS" = "20 20" ] || sed 's/^/#   funclat: /' "$T_TMP/funclat.err" "$T_TMP/fl_calls.out"
	# the same in run (--funclat) on a uprobe per function: the same one line, a runtime failure
	# (1), not bad usage
	KSIGHT_FEATURES_OFF=uprobe_multi t_as_user +bpf,+perfmon "$K" run syscalls --funclat "$PRIV_DIR/fl_calls:fl_sleep" -d 1 \
		>/dev/null 2>"$T_TMP/runfl.err"
	t_eq "run --funclat with +bpf,+perfmon, a uprobe per function: exit 1" 1 "$?"
	one_line_error "run --funclat with +bpf,+perfmon, a uprobe per function" "$T_TMP/runfl.err" "uprobe.*CAP_SYS_ADMIN"
	# a uprobe_multi link (functions, not USDT) is not refused so on 6.18: where the kernel has
	# one, funclat's functions attach without CAP_SYS_ADMIN
	if [ "$(KSIGHT_FEATURES_OFF= t_as_user +bpf,+perfmon "$K" run syscalls --funclat "$PRIV_DIR/fl_calls:fl_sleep" -d 0.2 -v 2>&1 >/dev/null |
		grep -c 'by uprobe_multi')" = 1 ]; then
		t_pass "run --funclat with +bpf,+perfmon: functions through uprobe_multi"
	else
		t_skip "run --funclat through uprobe_multi" "this kernel refuses it without CAP_SYS_ADMIN, or has none"
	fi
else
	t_eq "funclat with +bpf,+perfmon: 20 calls of fl_sleep, 20 USDT ticks" "20 20" "$FL_COUNTS"
fi

# serve, every collector: /metrics answers with each one's series.  mem's classic tracepoints
# need tracefs: where it is not readable, serve must still start (mem falls back or says so).
# port 0: the kernel picks a free one (a fixed one from $$ could be in the ephemeral range, taken
# by a connection of the busy loop: serve then exited 1 once in a full run)
t_as_user +bpf,+perfmon "$K" serve --listen 127.0.0.1:0 -d 4 >"$T_TMP/serve.out" 2>"$T_TMP/serve.err" &
SPID=$!
t_wait_for "$T_TMP/serve.err" "listening\|error"
SURL=$(sed -n 's|.*listening on \(http://[^ ]*\)|\1|p' "$T_TMP/serve.err")
sleep 1.5
if command -v curl >/dev/null 2>&1; then
	curl -s "$SURL" >"$T_TMP/metrics" 2>/dev/null
else
	busybox wget -q -O "$T_TMP/metrics" "$SURL" 2>/dev/null
fi
wait $SPID
_rc=$?
# on a failure, what serve said
t_eq "serve with +bpf,+perfmon: exit 0" 0 "$_rc$([ $_rc = 0 ] || { echo; tail -c 1000 "$T_TMP/serve.err"; })"
t_eq "serve: /metrics has every collector" "biolat mem offcpu runqlat syscalls tcp" \
	"$(sed -n 's/^ksight_collector_info{.*collector="\([a-z]*\)".*/\1/p' "$T_TMP/metrics" | sort -u | tr '\n' ' ' | sed 's/ $//')"

# serve --pin: the pins are files in bpffs, so the user needs bpffs mounted (mounting takes
# CAP_SYS_ADMIN), search access down to DIR and write access to DIR (made by root, given to the
# user); then it pins, a restart adopts, `unpin` removes it all as the same user.  In a private
# mount namespace with a bpffs of its own, as root mounts it (mode 0700).
if unshare -m true 2>/dev/null; then
	unshare -m sh -c '
		U=$1 K=$2 B=$3 O=$4 P=$5
		A="setpriv --reuid $U --regid $U --init-groups --inh-caps +bpf,+perfmon --ambient-caps +bpf,+perfmon"
		mount --make-rprivate / && mkdir -p "$B" && mount -t bpf -o mode=0700 bpf "$B" || exit 4
		$A "$K" serve -d 1 --listen 127.0.0.1:$P --pin "$B/ks" 2>"$O.noreach"
		echo $? >"$O.noreach.rc"
		mkdir "$B/ks" && chown "$U" "$B/ks" && chmod o+x "$B"
		for run in 1 2; do
			$A "$K" serve -d 1.5 --collectors syscalls,runqlat --listen 127.0.0.1:$P --pin "$B/ks" 2>"$O.pin$run"
			echo $? >"$O.pin$run.rc"
		done
		ls "$B/ks" >"$O.pinned"
		$A "$K" unpin "$B/ks" 2>"$O.unpin"
		echo $? >"$O.unpin.rc"
		ls -A "$B/ks" >"$O.after"' sh "$U" "$K" "$PRIV_DIR/bpffs" "$T_TMP/pin" 0
	if [ $? = 4 ]; then
		t_skip "serve --pin as the user" "cannot mount a bpffs in a private mount namespace"
	else
		t_eq "serve --pin under root's 0700 bpffs: exit 1" 1 "$(cat "$T_TMP/pin.noreach.rc")"
		one_line_error "serve --pin, bpffs root's 0700" "$T_TMP/pin.noreach" "does not let uid [0-9]+ reach it.*CAP_DAC_READ_SEARCH"
		t_eq "serve --pin DIR given to the user: exit 0, then a restart adopts both" "0 0 1" \
			"$(cat "$T_TMP/pin.pin1.rc") $(cat "$T_TMP/pin.pin2.rc") $(grep -c 'resumed the counters of 2 collectors' "$T_TMP/pin.pin2")$(
				[ "$(cat "$T_TMP/pin.pin1.rc")" = 0 ] || { echo; tail -c 800 "$T_TMP/pin.pin1"; })"
		t_eq "serve --pin: one directory per collector and the state" "ks_runqlat ks_state ks_syscalls" \
			"$(tr '\n' ' ' <"$T_TMP/pin.pinned" | sed 's/ $//')"
		t_eq "unpin as the user: exit 0, nothing left in DIR" "0 " "$(cat "$T_TMP/pin.unpin.rc") $(cat "$T_TMP/pin.after")"
	fi
	# where nothing is mounted at /sys/fs/bpf, the user cannot mount it: says CAP_SYS_ADMIN
	if ! awk '$2 == "/sys/fs/bpf" {f = 1} END {exit !f}' /proc/mounts; then
		t_as_user +bpf,+perfmon "$K" serve -d 1 --listen 127.0.0.1:0 --pin /sys/fs/bpf/ksight-priv 2>"$T_TMP/pin.nomount"
		t_eq "serve --pin, no bpffs mounted: exit 1" 1 "$?"
		one_line_error "serve --pin, no bpffs mounted" "$T_TMP/pin.nomount" "mounting needs CAP_SYS_ADMIN"
	fi
else
	t_skip "serve --pin as the user" "no unshare -m"
fi
t_no_leaks "no programs left by record, profile, funclat, the stack modes and serve" "$before_new"

# 2. The documented extra: CAP_DAC_READ_SEARCH lets classic tracepoints read their ids.
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
t_as_user +bpf,+perfmon "$K" doctor -j >"$D" 2>/dev/null
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
	t_as_user +bpf,+perfmon,+dac_read_search "$K" doctor -j >"$D.dac" 2>/dev/null
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
