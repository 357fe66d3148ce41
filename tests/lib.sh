# Shared helpers of the shell test tiers (POSIX sh: also runs under busybox in the qemu guest).
# A test prints "PASS: name", "FAIL: name: why" or "SKIP: name: reason"; tests/run.sh counts them.

: "${KSIGHT:=./ksight}"
: "${WORKLOADS:=build/workloads}"
: "${TMPDIR:=/tmp}"
# Seconds t_wait_for waits for a word: a TCG guest runs many times slower than the host.
: "${T_WAIT:=30}"
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
	# a name taken in a subshell ($(...)) did not count there: skip what exists, or a later
	# start would find the earlier run's output (its "tracing" line) before its own
	while [ -e "$T_TMP/$1.$T_SEQ" ]; do T_SEQ=$((T_SEQ + 1)); done
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
# t_in NAME LO HI VALUE: passes when LO <= VALUE <= HI (integers)
t_in() {
	if [ -n "$4" ] && [ "$4" -ge "$2" ] 2>/dev/null && [ "$4" -le "$3" ]; then t_pass "$1"; else t_fail "$1" "expected $2..$3, got '$4'"; fi
}

t_ok() {
	_n=$1; shift
	if "$@"; then t_pass "$_n"; else t_fail "$_n" "command failed: $*"; fi
}

# Waits until FILE contains PATTERN (grep -q), up to T_WAIT seconds; 1 on timeout.
t_wait_for() {
	_i=0
	while ! grep -q "$2" "$1" 2>/dev/null; do
		_i=$((_i + 1))
		[ $_i -gt $((T_WAIT * 20)) ] && return 1
		sleep 0.05
	done
	return 0
}

# IDs of BPF programs and links that no live process owns (leaks), one per line.
# Owners are found in /proc/*/fdinfo (prog_id/link_id of each BPF fd), not
# in bpftool's "pids": Debian's bpftool is built without the skeletons that
# fill those, so every object looked orphaned.  A program is also owned
# through an owned link.  Programs attached without an fd (systemd's cgroup
# programs) are listed too: compare before and after, with t_no_leaks.
t_orphans() {
	_own=$(grep -hE '^(prog|link)_id:' /proc/[0-9]*/fdinfo/* 2>/dev/null |
		awk '{ printf "%s\"%s %s\"", n++ ? "," : "", substr($1, 1, 4), $2 }')
	{
		bpftool -j prog show 2>/dev/null || echo '[]'
		bpftool -j link show 2>/dev/null || echo '[]'
	} | jq -rs --argjson own "[$_own]" '
		(.[0] // []) as $progs | (.[1] // []) as $links |
		($own | map({(.): true}) | add // {}) as $o |
		($links | map(select($o["link \(.id)"]) | {("prog \(.prog_id)"): true}) | add // {}) as $via |
		(($progs[] | "prog \(.id)"), ($links[] | "link \(.id)")) | select(($o[.] or $via[.]) | not)' | sort
}

# t_no_leaks NAME BEFORE: passes when every orphan is already listed in the
# file BEFORE (t_orphans output from the start of the test).  The kernel
# frees a dead process's programs shortly after it exits, and other tests
# may be loading and unloading in parallel, so new ones get 3 s to go.
# t_no_leaks PREFIX (one argument): the by-prefix check below.
t_no_leaks() {
	if [ $# -ge 2 ]; then _t_no_leaks_since "$@"; else _t_no_leaks_prefix "$@"; fi
}

_t_no_leaks_since() {
	_i=0
	while t_orphans | grep -vxF -f "$2" >"$T_TMP/leaks"; do
		_i=$((_i + 1))
		if [ $_i -gt 30 ]; then
			t_fail "$1" "BPF objects left with no owner: $(tr '\n' ' ' <"$T_TMP/leaks")"
			return 1
		fi
		sleep 0.1
	done
	t_pass "$1"
}

# Highest BPF program id now: programs loaded later have higher ids.
t_prog_max_id() {
	bpftool -j prog show 2>/dev/null | jq '[.[].id] | max // 0'
}

# IDs of programs loaded after MIN_ID whose name matches the jq regex RE and that no
# process holds (by a program fd, or a link fd whose link holds it): leaks, found even where
# bpftool cannot show pids.  A program of a process that just exited (this test's, or another
# test's running beside it) is freed a little later: 3 s for the list to empty.
t_unheld_progs() {
	_u=0
	while :; do
		_t_unheld_once "$1" "$2" >"$T_TMP/unheld.$$"
		[ -s "$T_TMP/unheld.$$" ] && [ $_u -lt 30 ] || break
		_u=$((_u + 1))
		sleep 0.1
	done
	cat "$T_TMP/unheld.$$"
}

_t_unheld_once() {
	cat /proc/[0-9]*/fdinfo/* 2>/dev/null | awk '/^prog_id:/ {print $2}' >"$T_TMP/held.$$"
	_links=$(cat /proc/[0-9]*/fdinfo/* 2>/dev/null | awk '/^link_id:/ {printf "%s%s", n++ ? "," : "", $2}')
	bpftool -j link show 2>/dev/null | jq -r --argjson l "[$_links]" \
		'.[] | select(.id as $i | $l | index($i)) | .prog_id' >>"$T_TMP/held.$$"
	# awk, not comm(1): the kernel matrix's busybox guest has no comm, and the check then
	# found nothing to report there
	bpftool -j prog show 2>/dev/null | jq -r --argjson min "$1" --arg re "$2" \
		'.[] | select(.id > $min and (.name // "" | test($re))) | .id' | sort -u |
		awk -v f="$T_TMP/held.$$" 'BEGIN { while ((getline l < f) > 0) held[l] } !($1 in held)'
}

# Runs ksight with ARGS until it prints that it is tracing; sets K_PID and K_OUT/K_ERR.
k_start() {
	t_name k.out
	K_OUT=$T_NAME
	K_ERR=$K_OUT.err
	# emptied here, not by the child's redirection (see g_start)
	: >"$K_OUT"
	: >"$K_ERR"
	"$KSIGHT" "$@" >"$K_OUT" 2>"$K_ERR" &
	K_PID=$!
	if ! t_wait_for "$K_ERR" "tracing"; then
		echo "ksight did not start: $(cat "$K_ERR")" >&2
		kill "$K_PID" 2>/dev/null
		return 1
	fi
}

# Ends process PID with SIGINT, again every half second while it lives (a background job of
# a non-interactive shell starts with SIGINT ignored: one sent before the tool installs its
# handler is lost), SIGKILL after 30 s; waits for it.
t_interrupt() {
	_n=0
	while kill -INT "$1" 2>/dev/null && [ $_n -lt 10 ]; do
		# a tool that took the signal may need a while to print its maps: 3 s before asking again
		_w=0
		while kill -0 "$1" 2>/dev/null && [ $_w -lt 30 ]; do
			sleep 0.1
			_w=$((_w + 1))
		done
		_n=$((_n + 1))
	done
	kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

# t_serve_start ERRFILE FAULT WHAT ARGS...: `ksight serve --listen 127.0.0.1:0 ARGS` in the
# background, FAULT a test-only KSIGHT_FAULT kill point (src/core/pin.h; empty: none); returns
# once it listens, with S_PID and URL set.  One that does not start fails WHAT and ends the test.
t_serve_start() {
	_err=$1 _fault=$2 _what=$3
	shift 3
	env ${_fault:+KSIGHT_FAULT=$_fault} "$KSIGHT" serve --listen 127.0.0.1:0 "$@" >/dev/null 2>"$_err" &
	S_PID=$!
	if ! t_wait_for "$_err" "listening on"; then
		t_fail "$_what" "$(cat "$_err")"
		exit 1
	fi
	URL=$(sed -n 's|.*listening on \(http://[^ ]*\)|\1|p' "$_err")
}

# t_get URL: the body of a GET, up to 5 s: curl, or busybox wget where there is no curl (the
# kernel matrix's guest)
t_get() {
	if command -v curl >/dev/null 2>&1; then
		curl -s --max-time 5 "$1"
	else
		# busybox 1.35's -T writes nothing here: timeout(1) bounds the wait instead
		timeout 5 busybox wget -q -O - "$1" 2>/dev/null
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

# g_start FILE CMD...: starts a workload that prints one line of ids and then waits for
# SIGUSR1 (pingpong -g, sleeper, cpuhog); sets G_FILE, G_PID and G_LINE (that first line).
g_start() {
	G_FILE=$1; shift
	# emptied here, not by the child's redirection: a file left by an earlier
	# run under the same name would otherwise give its line (and its "done")
	# to the loop below before the child has truncated it
	: >"$G_FILE"
	"$@" >"$G_FILE" &
	G_PID=$!
	# a whole first line (the workload prints it with one write, but a loaded
	# machine may take long to get there)
	_gi=0
	until head -1 "$G_FILE" 2>/dev/null | grep -q ' .*$'; do
		_gi=$((_gi + 1))
		[ $_gi -gt 1200 ] && return 1
		sleep 0.05
	done
	G_LINE=$(head -1 "$G_FILE")
}

# Status `ksight doctor -j` gives feature NAME on this kernel (OK, WARN, MISSING; empty if
# unknown), from one doctor run per test.
k_feature() {
	[ -s "$T_TMP/doctor.json" ] || "$KSIGHT" doctor -j >"$T_TMP/doctor.json" 2>/dev/null
	jq -r --arg n "$1" '.checks[]? | select(.name == $n) | .status' "$T_TMP/doctor.json" 2>/dev/null
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

# Passes when no BPF program whose name starts with PREFIX outlives its process
# (held by no program or link fd of a live process; t_unheld_progs gives the
# kernel 3 s to free the closed ones); other users' programs may come and go meanwhile.
_t_no_leaks_prefix() {
	t_eq "no leaked $1* programs" "" "$(t_unheld_progs 0 "^$1" | tr '\n' ' ')"
}

# t_fsum FILE RE: the sum of the values of folded-stack lines ("frame;...;frame N") whose stack part matches the awk regex RE.
t_fsum() {
	awk -v re="$2" '{ n = $NF; s = $0; sub(/ [0-9]+$/, "", s); if (s ~ re) t += n } END { printf "%.0f\n", t + 0 }' "$1"
}

# t_priv_user NAME TAG [TOOL...]: a throw-away user U (ksightTAG$$) and PRIV_DIR (0755, under
# /var/tmp: the user cannot enter root's 0700 T_TMP) holding K, a copy of $KSIGHT the user can run;
# returns 1 after a SKIP naming what this machine lacks (a TOOL, useradd, setpriv --ambient-caps).
# The caller's T_CLEANUP removes both: userdel "$U"; rm -rf "$PRIV_DIR".
t_priv_user() {
	_pu_name=$1 _pu_tag=$2
	shift 2
	for _pu_tool in useradd userdel setpriv "$@"; do
		command -v "$_pu_tool" >/dev/null 2>&1 || { t_skip "$_pu_name" "no $_pu_tool"; return 1; }
	done
	setpriv --help 2>&1 | grep -q -- --ambient-caps || { t_skip "$_pu_name" "setpriv has no --ambient-caps"; return 1; }
	U=ksight$_pu_tag$$
	useradd -M -U -s /bin/sh "$U" 2>"$T_TMP/useradd.err" ||
		{ t_skip "$_pu_name" "useradd failed: $(head -1 "$T_TMP/useradd.err")"; return 1; }
	PRIV_DIR=$(mktemp -d "/var/tmp/ksight-$_pu_tag.XXXXXX") || { userdel "$U"; t_skip "$_pu_name" "no /var/tmp"; return 1; }
	chmod 755 "$PRIV_DIR"
	cp "$KSIGHT" "$PRIV_DIR/ksight"
	K=$PRIV_DIR/ksight
}

# t_as_user CAPS CMD...: CMD as $U (t_priv_user) with exactly CAPS (e.g. +bpf,+perfmon) effective
t_as_user() {
	_au_caps=$1
	shift
	setpriv --reuid "$U" --regid "$U" --init-groups --inh-caps "$_au_caps" --ambient-caps "$_au_caps" "$@"
}

# t_tcg_skip NAME: true after a SKIP of the timing check NAME where the guest is emulated (TCG),
# whose instructions are slowed unevenly; false elsewhere, where the check runs
t_tcg_skip() { [ "${KSIGHT_ACCEL:-}" = tcg ] && t_skip "$1" "times under emulation (TCG)"; }

# A free TCP port on 127.0.0.1.
t_free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# t_promq QUERY: the first result's value from the Prometheus on port $PP (empty when none).
t_promq() {
	curl -s --max-time 5 --data-urlencode "query=$1" "http://127.0.0.1:$PP/api/v1/query" |
		jq -r '.data.result[0].value[1] // empty' 2>/dev/null
}

# t_prompoll QUERY VALUE [SECONDS]: waits until QUERY gives VALUE (default 40 s); prints the last answer.
t_prompoll() {
	_end=$(($(date +%s) + ${3:-40}))
	while :; do
		_v=$(t_promq "$1")
		if [ "$_v" = "$2" ] || [ "$(date +%s)" -ge $_end ]; then
			echo "$_v"
			return
		fi
		sleep 0.5
	done
}

# t_netns_pair WHAT: two network namespaces NS_A and NS_B joined by a veth pair (NS_DA in A,
# NS_DB in B), addresses ${NS_NET}1 and ${NS_NET}2/24, IPv4 only with static neighbours: no
# ARP, ND or MLD packet of their own, so the devices carry the test's packets alone.  Sets
# T_CLEANUP to remove them; a machine that cannot make them SKIPs WHAT and ends the test.
t_netns_pair() {
	NS_A=ksight-$1-a-$$
	NS_B=ksight-$1-b-$$
	NS_DA=ksa$$
	NS_DB=ksb$$
	NS_NET=10.197.$(($$ % 250)).
	if ! ip netns list >/dev/null 2>&1; then
		t_skip "$1" "no 'ip netns' (iproute2)"
		exit 0
	fi
	T_CLEANUP='ip netns del "$NS_A" 2>/dev/null; ip netns del "$NS_B" 2>/dev/null'
	if ! { ip netns add "$NS_A" && ip netns add "$NS_B" &&
		ip netns exec "$NS_A" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 &&
		ip netns exec "$NS_B" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 &&
		ip link add "$NS_DA" address 02:00:00:00:0b:01 type veth peer name "$NS_DB" address 02:00:00:00:0b:02 &&
		ip link set "$NS_DA" netns "$NS_A" && ip link set "$NS_DB" netns "$NS_B" &&
		ip -n "$NS_A" addr add "${NS_NET}1/24" dev "$NS_DA" && ip -n "$NS_B" addr add "${NS_NET}2/24" dev "$NS_DB" &&
		ip -n "$NS_A" neigh add "${NS_NET}2" lladdr 02:00:00:00:0b:02 dev "$NS_DA" nud permanent &&
		ip -n "$NS_B" neigh add "${NS_NET}1" lladdr 02:00:00:00:0b:01 dev "$NS_DB" nud permanent &&
		ip -n "$NS_A" link set "$NS_DA" up && ip -n "$NS_B" link set "$NS_DB" up; }; then
		t_skip "$1" "cannot make the network namespaces and veth pair"
		exit 0
	fi
}
