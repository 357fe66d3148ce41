# Integration: `-- CMD` where no cgroup can be made for it (a user with only CAP_BPF + CAP_PERFMON, `ip netns exec` without a cgroup2 mount) follows the command and its fork chain by pid: the same exact counts as the cgroup mode, nothing of a process beside it, nothing left behind.
. tests/lib.sh
need_root cmd_follow

t_priv_user cmd_follow fol jq ip || exit 0
NS=ksightfol$$
T_CLEANUP='kill $NOISE 2>/dev/null; userdel "$U" 2>/dev/null; ip netns del "$NS" 2>/dev/null; rm -rf "$PRIV_DIR"'
t_orphans >"$T_TMP/orphans.before"

# execs of another process all along, the user's own among them: none may be counted
# (setpriv itself in the background, not t_as_user: $! must be the process that becomes the loop)
setpriv --reuid "$U" --regid "$U" --init-groups sh -c 'while :; do /bin/true; sleep 0.05; done' >/dev/null 2>&1 &
NOISE=$!

# The fork chain: sh, its three children, a child sh (its own fork or exec) and its two: 7 execve.
CHAIN='for i in 1 2 3; do /bin/true; done; sh -c "for i in 1 2; do /bin/true; done"'
execs() { jq '[.rows[] | select(.syscall == "execve") | .count] | add' "$1"; }
# every row, "name=count" sorted: the two modes must see the very same calls
table() { jq -r '[.rows[] | "\(.syscall)=\(.count)"] | sort | join(" ")' "$1"; }

# 1. root, a cgroup of its own: the reference
"$KSIGHT" syscalls -n 0 -v -j -o "$T_TMP/root.json" -- sh -c "$CHAIN" 2>"$T_TMP/root.err"
t_eq "root: exit 0, 7 execve of the fork chain" "0 7" "$? $(execs "$T_TMP/root.json")"
if grep -q "followed in cgroup" "$T_TMP/root.err"; then
	t_pass "root: -v says the command has a cgroup of its own"
else
	t_skip "root: cgroup mode" "no cgroup could be made here: $(grep 'CMD' "$T_TMP/root.err" | head -1)"
fi

# 2. CAP_BPF + CAP_PERFMON only: no cgroup can be made, the pid set follows the same execs
t_as_user +bpf,+perfmon "$K" syscalls -n 0 -v -j -- sh -c "$CHAIN" >"$T_TMP/user.json" 2>"$T_TMP/user.err"
t_eq "bpf+perfmon: exit 0, the same 7 execve" "0 7" "$? $(execs "$T_TMP/user.json")"
t_ok "bpf+perfmon: -v says followed by pid, and why" \
	grep -q "followed by pid .*cannot make cgroup .*Permission denied" "$T_TMP/user.err"
t_eq "bpf+perfmon: every call of the chain as the cgroup mode counts it (vfork, exit_group, ...)" \
	"$(table "$T_TMP/root.json")" "$(table "$T_TMP/user.json")"

# 3. the other tracing commands in that mode: wall and profile see only the command
t_as_user +bpf,+perfmon "$K" wall -j -- sleep 0.2 >"$T_TMP/wall.json" 2>/dev/null
t_eq "bpf+perfmon: wall -- sleep: exit 0, one row, sleep's" "0 sleep" \
	"$? $(jq -r '[.rows[] | .comm] | unique | join(" ")' "$T_TMP/wall.json")"
t_as_user +bpf,+perfmon "$K" profile -F 499 -j -- sh -c 'i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done' \
	>"$T_TMP/prof.json" 2>/dev/null
t_eq "bpf+perfmon: profile: exit 0, every stack the command's" "0 sh" \
	"$? $(jq -r '[.stacks[] | .frames[0].name | select(. != "ksight")] | unique | join(" ")' "$T_TMP/prof.json")"

# 4. root under ip netns exec: /sys is remounted without the cgroup2 hierarchy
ip netns add "$NS"
ip netns exec "$NS" "$KSIGHT" syscalls -n 0 -v -j -o "$T_TMP/ns.json" -- sh -c "$CHAIN" 2>"$T_TMP/ns.err"
t_eq "ip netns exec: exit 0, the same 7 execve" "0 7" "$? $(execs "$T_TMP/ns.json")"
t_ok "ip netns exec: -v says followed by pid (no cgroup v2 mount)" \
	grep -q "followed by pid .*no cgroup v2 hierarchy is mounted" "$T_TMP/ns.err"
t_eq "ip netns exec: every call as the cgroup mode counts it" "$(table "$T_TMP/root.json")" "$(table "$T_TMP/ns.json")"
# run: several collectors in one process take the one set (and their shared budget counts it)
ip netns exec "$NS" "$KSIGHT" run syscalls,runqlat -n 0 -j -o "$T_TMP/run.json" -- "$WORKLOADS/cmd_calls" 1000 300 0 \
	2>"$T_TMP/run.err"
t_eq "ip netns exec: run syscalls,runqlat: exit 0, exactly the 1600 getppid of the command and its two children" \
	"0 1600" "$? $(jq -s '[.[] | select(.collector == "syscalls") | .rows[] | select(.syscall == "getppid") | .count] | add' "$T_TMP/run.json")"

# 5. the set is sized from the budget: 1/64 of --max-memory, 256 entries at least, allocated as used
ip netns exec "$NS" "$KSIGHT" syscalls --max-memory 64M -j -o "$T_TMP/b64.json" -- true 2>/dev/null
ip netns exec "$NS" "$KSIGHT" syscalls --max-memory 1M -j -o "$T_TMP/b1.json" -- true 2>/dev/null
t_eq "budget: the followed set within 1/64 of 64M, on demand" "true false" \
	"$(jq -r '.maps.by_map[] | select(.name == "ks_follow") | "\(.bytes <= 64 * 1048576 / 64 and .max_entries > 256) \(.preallocated)"' "$T_TMP/b64.json")"
t_eq "budget: 256 entries at --max-memory 1M" "256" \
	"$(jq '.maps.by_map[] | select(.name == "ks_follow") | .max_entries' "$T_TMP/b1.json")"

kill $NOISE
wait $NOISE 2>/dev/null
t_no_leaks "nothing left attached" "$T_TMP/orphans.before"
exit $T_FAILED
