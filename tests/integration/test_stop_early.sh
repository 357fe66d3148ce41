# Integration: a SIGINT that lands before a command has set its handlers is not lost when ksight is a background job (whose SIGINT the shell ignores): a run ends, any other command dies of it.
. tests/lib.sh
need_root stop_early

fifo=$T_TMP/fifo
mkfifo "$fifo"

# bg_blocked NAME ARGS...: ksight ARGS as a background job of a non-interactive sh, left
# blocked opening the FIFO (no partner ever comes) before any handler of its own; one
# SIGINT then; it must end by itself.  Sets RC to its status ("running" if it did not end).
bg_blocked() {
	_name=$1; shift
	rm -f "$T_TMP/pid" "$T_TMP/rc"
	sh -c '"$@" 2>"$0.err" & echo $! >"$0.pid.tmp"; mv "$0.pid.tmp" "$0.pid"; wait $!; echo $? >"$0.rc"' \
		"$T_TMP/bg" "$KSIGHT" "$@" &
	_sh=$!
	_i=0
	while ! [ -s "$T_TMP/bg.pid" ] && [ $_i -lt 200 ]; do sleep 0.01; _i=$((_i + 1)); done
	_p=$(cat "$T_TMP/bg.pid")
	# the condition, not a delay: blocked in open(2) of the FIFO, i.e. inside the command
	_i=0
	while [ "$(cat "/proc/$_p/wchan" 2>/dev/null)" != wait_for_partner ] && [ $_i -lt 600 ]; do
		sleep 0.01
		_i=$((_i + 1))
	done
	kill -INT "$_p"
	_i=0
	while kill -0 "$_p" 2>/dev/null && [ $_i -lt 30 ]; do sleep 0.1; _i=$((_i + 1)); done
	if kill -0 "$_p" 2>/dev/null; then
		RC=running
		kill -KILL "$_p"
	fi
	wait "$_sh"
	[ "${RC:-}" = running ] || RC=$(cat "$T_TMP/bg.rc")
	rm -f "$T_TMP/bg.pid" "$T_TMP/bg.rc"
}

t_orphans >"$T_TMP/orphans.before"

# a collector: the handler is set from main on, so the open is interrupted and the run ends
RC=
bg_blocked syscalls syscalls -d 10 -o "$fifo"
t_eq "syscalls -o FIFO in the background: one SIGINT ends it (exit 2, said why)" "2" "$RC"
t_eq "syscalls: the open was interrupted" "ksight: error: cannot open output '$fifo': Interrupted system call" \
	"$(head -1 "$T_TMP/bg.err")"

# a command with no run: SIGINT is reset to its default and ends it
RC=
bg_blocked diff diff "$fifo" "$fifo"
t_eq "diff FIFO in the background: one SIGINT kills it (128 + 2)" "130" "$RC"

# the brief's reproduction: a SIGINT 0.1 s after the start of a background job
out=$T_TMP/early.json
sh -c '"$1" syscalls -j -d 10 >"$2" 2>"$2.err" & sleep 0.1; kill -INT $!; wait $!; echo $? >"$2.rc"' sh "$KSIGHT" "$out" &
sh=$!
i=0
while ! [ -s "$out.rc" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
if [ -s "$out.rc" ]; then
	t_eq "syscalls & then SIGINT at 0.1 s: exit 0 with the JSON report" "0 syscalls" \
		"$(cat "$out.rc") $(jq -r .collector "$out" 2>/dev/null)"
else
	t_fail "syscalls & then SIGINT at 0.1 s: exit 0 with the JSON report" "still running after 5 s"
	t_interrupt "$(pgrep -P "$sh")"
fi
wait "$sh"
t_no_leaks "nothing left attached" "$T_TMP/orphans.before"
exit $T_FAILED
