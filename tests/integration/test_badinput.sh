# Integration: bad input exits 2 with one error line and loads nothing; signals, -o and -j errors for every collector.
. tests/lib.sh
need_root badinput

# Collectors and other commands, from the top-level help, so new ones are covered without editing this file.
"$KSIGHT" -h >"$T_TMP/top"
b_section() {
	awk -v s="$1:" '$0 == s { on = 1; next } /^$/ { on = 0 } on && /^  [a-z]/ { print $1 }' "$T_TMP/top"
}
COLLECTORS=$(b_section Collectors)
COMMANDS=$(b_section Commands)
[ -n "$COLLECTORS" ] || { t_fail "badinput: collectors" "none listed in 'ksight -h'"; exit 1; }

# A pid (and tid) that no task has: the highest free number below pid_max.
pid_max=$(cat /proc/sys/kernel/pid_max)
NOPID=$((pid_max - 1))
while [ -e "/proc/$NOPID" ]; do NOPID=$((NOPID - 1)); done
CG2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)

t_orphans >"$T_TMP/orphans.before"

# b_usage NAME ARGS...: `ksight ARGS` exits 2, prints nothing on stdout and
# exactly one "ksight: error: " line on stderr.
b_usage() {
	_n=$1
	shift
	# bad input that is accepted would trace until a signal: a watchdog ends it
	"$KSIGHT" "$@" >"$T_TMP/b.out" 2>"$T_TMP/b.err" </dev/null &
	_p=$!
	(sleep 5 && kill -INT "$_p" 2>/dev/null) &
	_w=$!
	wait "$_p"
	_rc=$?
	kill "$_w" 2>/dev/null
	_lines=$(wc -l <"$T_TMP/b.err")
	if [ "$_rc" != 2 ]; then
		t_fail "$_n" "'ksight $*' exited $_rc, want 2: $(head -2 "$T_TMP/b.err" | tr '\n' ' ')"
	elif [ "$_lines" != 1 ]; then
		t_fail "$_n" "'ksight $*' wrote $_lines lines to stderr, want 1: $(head -3 "$T_TMP/b.err" | tr '\n' '|')"
	elif ! grep -q '^ksight: error: ' "$T_TMP/b.err"; then
		t_fail "$_n" "'ksight $*': not a 'ksight: error: ' line: $(cat "$T_TMP/b.err")"
	elif [ -s "$T_TMP/b.out" ]; then
		t_fail "$_n" "'ksight $*' wrote to stdout: $(head -1 "$T_TMP/b.out")"
	else
		t_pass "$_n"
	fi
}

# b_has CMD OPTION: the help of CMD lists OPTION (e.g. --pid)
b_has() {
	"$KSIGHT" "$1" -h 2>/dev/null | grep -qE -- "$2( |\$)"
}

b_usage "unknown command" no-such-command
b_usage "unknown command that looks like an option" --no-such-option
b_usage "unknown command with a newline" "$(printf 'x\ny')"
b_usage "unexpected argument with a newline" doctor "$(printf 'x\ny')"
for c in $COMMANDS; do
	b_usage "$c: unknown option" "$c" --no-such-option
done

for c in $COLLECTORS; do
	b_usage "$c: unknown option" "$c" --no-such-option
	b_usage "$c: unexpected positional argument" "$c" extra-argument
	if b_has "$c" --duration; then
		b_usage "$c: -d -1" "$c" -d -1
		b_usage "$c: -d without a value" "$c" -d
		b_usage "$c: -d with a bad unit" "$c" -d 5x
	fi
	if b_has "$c" --duration; then
		# "until Ctrl-C" is no -d: -d 0 is refused like any non-positive duration
		b_usage "$c: -d 0" "$c" -d 0
	fi
	if b_has "$c" --interval; then
		b_usage "$c: -i 0" "$c" -i 0
		# shorter than 10 ms would be a busy loop of reports
		b_usage "$c: -i 1e-9" "$c" -i 1e-9
		b_usage "$c: -i 9ms" "$c" -i 9ms
	fi
	# an empty path would be the root cgroup: every task
	b_has "$c" --cgroup && b_usage "$c: -c ''" "$c" -c ''
	# a newline or escape in an echoed argument stays on the one error line
	b_has "$c" --by && b_usage "$c: --by with a newline" "$c" --by "$(printf 'a\nksight: error: forged')"
	if b_has "$c" --comm; then
		b_usage "$c: --comm with an escape" "$c" --comm "$(printf '\033[2J0123456789abcdef')"
		t_eq "$c: the escape is shown escaped, not sent to the terminal" "0 1" \
			"$(tr -dc '\033' <"$T_TMP/b.err" | wc -c | tr -d ' ') $(grep -c 'x1b\[2J' "$T_TMP/b.err")"
	fi
	if b_has "$c" --pid; then
		b_usage "$c: pid that does not exist" "$c" -p "$NOPID"
		b_usage "$c: pid that is not a number" "$c" -p 12ab
		b_usage "$c: pid 0" "$c" -p 0
	fi
	if b_has "$c" --tid; then
		b_usage "$c: tid that does not exist" "$c" -t "$NOPID"
		b_has "$c" --pid && b_usage "$c: tid not in the pid" "$c" -p $$ -t 1
	fi
	if b_has "$c" --cgroup; then
		b_usage "$c: cgroup path that does not exist" "$c" -c "/sys/fs/cgroup/no-such-cgroup-$$"
		b_usage "$c: relative cgroup that does not exist" "$c" -c "no-such-cgroup-$$"
		b_usage "$c: cgroup path that is not cgroup v2 (/tmp)" "$c" -c /tmp
		[ -n "$CG2" ] && b_usage "$c: cgroup path that is a file" "$c" -c "$CG2/cgroup.procs"
	fi
	if b_has "$c" --cpu; then
		b_usage "$c: bad CPU list" "$c" -C 0-3x
		b_usage "$c: reversed CPU range" "$c" -C 3-1
		b_usage "$c: CPU list with a trailing comma" "$c" -C 0,
		b_usage "$c: CPU that does not exist" "$c" -C 1000
	fi
	b_has "$c" --comm && b_usage "$c: --comm longer than 15" "$c" --comm 0123456789abcdef
	b_has "$c" --by && b_usage "$c: unknown --by key" "$c" --by no-such-key
	b_has "$c" --top && b_usage "$c: -n -1" "$c" -n -1
	b_has "$c" --json && b_usage "$c: flag given a value" "$c" --json=yes
	b_has "$c" --output && b_usage "$c: -o in a directory that does not exist" "$c" -o "/nonexistent-$$/report" -d 1
	b_has "$c" --heatmap && b_usage "$c: --heatmap without -i" "$c" --heatmap "$T_TMP/h.svg" -d 1

	# under -j the error is also a JSON object on stdout
	if b_has "$c" --json; then
		for args in "-j --no-such-option" "-j -p $NOPID" "-j -d -1"; do
			# shellcheck disable=SC2086
			"$KSIGHT" "$c" $args >"$T_TMP/j.out" 2>"$T_TMP/j.err"
			rc=$?
			err=$(jq -r 'select(type == "object") | .error | strings' "$T_TMP/j.out" 2>/dev/null)
			if [ "$rc" = 2 ] && [ "$(wc -l <"$T_TMP/j.out")" = 1 ] && [ -n "$err" ] &&
				[ "ksight: error: $err" = "$(cat "$T_TMP/j.err")" ]; then
				t_pass "$c $args: error as a JSON object on stdout"
			else
				t_fail "$c $args: error as a JSON object on stdout" "rc $rc, stdout '$(cat "$T_TMP/j.out")', stderr '$(cat "$T_TMP/j.err")'"
			fi
		done
	fi
done
t_no_leaks "bad input: no BPF programs or links left behind" "$T_TMP/orphans.before"

# b_signal COLLECTOR SIG ARGS...: a run stopped by SIG after "tracing" exits 0 with a final report.
b_signal() {
	_c=$1 _sig=$2
	shift 2
	if ! k_start "$_c" "$@"; then
		t_fail "$_c: SIG$_sig during a run" "did not start: $(head -2 "$K_ERR" | tr '\n' ' ')"
		return
	fi
	sleep 0.2
	kill "-$_sig" "$K_PID"
	wait "$K_PID"
	_rc=$?
	if [ "$_rc" != 0 ]; then
		t_fail "$_c: SIG$_sig during a run" "exited $_rc: $(tail -1 "$K_ERR")"
	elif ! [ -s "$K_OUT" ]; then
		t_fail "$_c: SIG$_sig during a run" "no report on stdout"
	else
		t_pass "$_c: SIG$_sig during a run exits 0"
	fi
}

# b_targets COLLECTOR: the arguments a run of it needs (funclat: a libc function nobody calls; netflow: a device)
b_targets() {
	[ "$1" = funclat ] && echo "libc.so.6:mtrace"
	[ "$1" = netflow ] && echo "--tc lo"
	return 0
}

for c in $COLLECTORS; do
	T=$(b_targets "$c")
	b_signal "$c" INT $T -j
	t_eq "$c: SIGINT report is the collector's JSON" "$c" "$(jq -r .collector "$K_OUT" 2>/dev/null)"
	b_signal "$c" TERM $T
	t_eq "$c: SIGTERM report ends with the loss line" "lost:" "$(tail -1 "$K_OUT" | cut -d' ' -f1)"
	t_no_leaks "$c: no BPF objects left after SIGINT and SIGTERM" "$T_TMP/orphans.before"

	# a duration too long to sleep in one go must not turn into a busy loop
	if b_has "$c" --duration && k_start "$c" $T -d 1e300; then
		t0=$(awk '{ print $14 + $15 }' "/proc/$K_PID/stat")
		sleep 1
		t1=$(awk '{ print $14 + $15 }' "/proc/$K_PID/stat")
		k_stop
		ticks=$((t1 - t0))
		if [ "$ticks" -le 10 ]; then t_pass "$c: -d 1e300 sleeps (CPU ticks in 1 s: $ticks)"; else t_fail "$c: -d 1e300 sleeps" "used $ticks CPU ticks in 1 s"; fi
	fi

	# SIGINT while loading: the handlers are set before the first BPF object
	# exists, so whenever the signal lands the run ends with nothing left
	# behind.  A signal that lands before the handlers (in the first
	# milliseconds, when a background job ignores SIGINT) is lost; a second
	# one ends the run then.
	early=0 bad=""
	for delay in 0.001 0.002 0.003 0.005 0.01 0.02 0.03 0.05 0.08 0.12; do
		out=$T_TMP/early.out
		"$KSIGHT" "$c" $T -j -d 10 >"$out" 2>"$out.err" &
		pid=$!
		sleep "$delay"
		kill -INT "$pid" 2>/dev/null
		# the report is the last thing a run writes: give it a second
		i=0
		while ! [ -s "$out" ] && [ $i -lt 20 ]; do
			sleep 0.05
			i=$((i + 1))
		done
		if [ -s "$out" ]; then
			early=$((early + 1))
		else
			t_wait_for "$out.err" "tracing" || true
			kill -INT "$pid" 2>/dev/null
		fi
		wait "$pid"
		rc=$?
		[ "$rc" = 0 ] || bad="$bad delay ${delay}s: exit $rc ($(tail -1 "$out.err"));"
		jq -e .collector "$out" >/dev/null 2>&1 || bad="$bad delay ${delay}s: no JSON report;"
	done
	echo "# $c: $early of 10 early SIGINTs ended the run by themselves"
	if [ -z "$bad" ]; then t_pass "$c: early SIGINT exits 0 with a report"; else t_fail "$c: early SIGINT exits 0 with a report" "$bad"; fi
	t_no_leaks "$c: no BPF objects left after early SIGINTs" "$T_TMP/orphans.before"

	# -o FILE: the report goes to FILE, stdout stays empty
	if b_has "$c" --output; then
		f=$T_TMP/report.txt
		echo ks-stale-content >"$f"
		"$KSIGHT" "$c" $T -d 0.2 -o "$f" >"$T_TMP/o.out" 2>"$T_TMP/o.err"
		rc=$?
		if [ "$rc" = 0 ] && ! [ -s "$T_TMP/o.out" ] && [ "$(tail -1 "$f" | cut -d' ' -f1)" = "lost:" ] &&
			! grep -q ks-stale-content "$f"; then
			t_pass "$c: -o FILE writes the text report to FILE"
		else
			t_fail "$c: -o FILE writes the text report to FILE" "rc $rc, stdout $(wc -c <"$T_TMP/o.out") bytes, file: $(head -2 "$f" | tr '\n' ' ')"
		fi
		"$KSIGHT" "$c" $T -d 0.2 -j -o "$f" >"$T_TMP/o.out" 2>"$T_TMP/o.err"
		rc=$?
		if [ "$rc" = 0 ] && ! [ -s "$T_TMP/o.out" ] && [ "$(jq -r .collector "$f" 2>/dev/null)" = "$c" ]; then
			t_pass "$c: -o FILE -j writes the JSON report to FILE"
		else
			t_fail "$c: -o FILE -j writes the JSON report to FILE" "rc $rc, file: $(head -c 200 "$f")"
		fi
		# a report that cannot be written is a runtime failure, said once
		"$KSIGHT" "$c" $T -d 0.1 -o /dev/full >/dev/null 2>"$T_TMP/o.err"
		rc=$?
		t_eq "$c: -o /dev/full exits 1 with one error line" "1 1" "$rc $(grep -c 'error' "$T_TMP/o.err")"
	fi
done
t_no_leaks "badinput: no BPF objects left at the end" "$T_TMP/orphans.before"
exit $T_FAILED
