# Shared helpers of the shell test tiers (POSIX sh: also runs under busybox in the qemu guest).
# A test prints "PASS: name", "FAIL: name: why" or "SKIP: name: reason"; tests/run.sh counts them.

: "${KSIGHT:=./ksight}"
: "${WORKLOADS:=build/workloads}"
: "${TMPDIR:=/tmp}"
T_TMP=$(mktemp -d "$TMPDIR/ksight-test.XXXXXX")
T_FAILED=0
trap 't_cleanup' EXIT INT TERM

t_cleanup() {
	[ -n "${T_CLEANUP:-}" ] && eval "$T_CLEANUP"
	rm -rf "$T_TMP"
}

# A fresh name under T_TMP per call (busybox date has no %N, so a counter rather than the time).
T_SEQ=0
t_name() {
	T_SEQ=$((T_SEQ + 1))
	T_NAME=$T_TMP/$1.$T_SEQ
}

t_pass() { echo "PASS: $1"; }
t_fail() { echo "FAIL: $1: $2"; T_FAILED=1; }
t_skip() { echo "SKIP: $1: $2"; }

# t_eq NAME EXPECTED ACTUAL
t_eq() {
	if [ "$2" = "$3" ]; then t_pass "$1"; else t_fail "$1" "expected '$2', got '$3'"; fi
}

# t_ok NAME COMMAND...: passes when the command succeeds
t_ok() {
	_n=$1; shift
	if "$@"; then t_pass "$_n"; else t_fail "$_n" "command failed: $*"; fi
}

# Waits until FILE contains PATTERN (grep -q), up to ~10 s; 1 on timeout.
t_wait_for() {
	_i=0
	while ! grep -q "$2" "$1" 2>/dev/null; do
		_i=$((_i + 1))
		[ $_i -gt 200 ] && return 1
		sleep 0.05
	done
	return 0
}

# IDs of BPF programs and links that no live process owns (leaks), one per line.
t_orphans() {
	for kind in prog link; do
		bpftool -j $kind show 2>/dev/null | jq -r --arg k "$kind" '.[] | select((.pids // []) | length == 0) | "\($k) \(.id)"'
	done | sort
}

# Runs ksight with ARGS until it prints that it is tracing; sets K_PID and K_OUT/K_ERR.
k_start() {
	t_name k.out
	K_OUT=$T_NAME
	K_ERR=$K_OUT.err
	"$KSIGHT" "$@" >"$K_OUT" 2>"$K_ERR" &
	K_PID=$!
	if ! t_wait_for "$K_ERR" "tracing"; then
		echo "ksight did not start: $(cat "$K_ERR")" >&2
		kill "$K_PID" 2>/dev/null
		return 1
	fi
}

# Stops the ksight started by k_start with SIGINT and waits for its report.
k_stop() {
	kill -INT "$K_PID" 2>/dev/null
	wait "$K_PID"
}

# Starts the sysload workload with ARGS; sets W_PID, W_TID and W_TID2 from its first line.
w_start() {
	t_name w
	W_FIFO=$T_NAME
	"$WORKLOADS/sysload" "$@" >"$W_FIFO" &
	W_PID=$!
	t_wait_for "$W_FIFO" " " || return 1
	read -r _p W_TID W_TID2 <"$W_FIFO"
}

# Lets the workload run its calls and waits for it to finish.
w_go() {
	kill -USR1 "$W_PID"
	wait "$W_PID"
}

# jq over the report of the last k_stop.
k_jq() {
	jq -r "$@" "$K_OUT"
}

need_root() {
	if [ "$(id -u)" != 0 ]; then
		t_skip "$1" "needs root"
		exit 0
	fi
}
