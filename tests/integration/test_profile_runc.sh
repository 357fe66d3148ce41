# Integration: `ksight profile` of a process in a runc container (its own root filesystem, mount and pid namespaces): its frames symbolized from the container's files through /proc/PID/root.
. tests/lib.sh
need_root profile_runc
command -v runc >/dev/null 2>&1 || { t_skip "profile in a container" "no runc"; exit 0; }
W=$(readlink -f "$WORKLOADS/prof_qsort")
HZ=99
NAME=ksight-prof-$$
B=$T_TMP/bundle
R=$B/rootfs


# The root filesystem: the workload at /prof_qsort (a path the host does not have) and the
# libraries it loads, copied; nothing else.
mkdir -p "$R" || exit 1
cp "$W" "$R/prof_qsort"
for lib in $(ldd "$W" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do
	mkdir -p "$R$(dirname "$lib")"
	cp -L "$lib" "$R$lib"
done
[ ! -e /prof_qsort ] || { t_skip "profile in a container" "the host has a /prof_qsort of its own"; exit 0; }
(cd "$B" && runc spec) || { t_fail "runc spec" "failed"; exit 1; }
# not a terminal, the workload for 8 s, no rlimits (root here cannot raise them), a pod-like cgroup
jq --arg uid "$(cat /proc/sys/kernel/random/uuid | tr - _)" '
	.process.terminal = false | .process.args = ["/prof_qsort", "8"] | del(.process.rlimits) |
	.root.readonly = true |
	.linux.cgroupsPath = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod\($uid).slice/cri-containerd-ks\($uid).scope"' \
	"$B/config.json" >"$B/config.new" && mv "$B/config.new" "$B/config.json"
T_CLEANUP="runc kill $NAME KILL 2>/dev/null; sleep 0.2; runc delete -f $NAME 2>/dev/null"
(cd "$B" && runc run -d "$NAME" >"$T_TMP/runc.out" 2>&1) || { t_fail "runc run" "$(cat "$T_TMP/runc.out")"; exit 1; }
PID=$(runc state "$NAME" | jq -r .pid)
t_ok "container: its process sees /prof_qsort as its own root's" test -e "/proc/$PID/root/prof_qsort"
t_ok "container: another mount namespace" test "$(readlink /proc/$PID/ns/mnt)" != "$(readlink /proc/self/ns/mnt)"

"$KSIGHT" profile -p "$PID" -F $HZ -d 3 --call-graph dwarf -o "$T_TMP/c.folded" 2>"$T_TMP/c.err"
t_eq "profile -p (container): exit 0" "0" "$?"
total=$(t_fsum "$T_TMP/c.folded" '.')
hot=$(t_fsum "$T_TMP/c.folded" ';hot_spin$')
full=$(t_fsum "$T_TMP/c.folded" '^prof_qsort;.*;main;.*qsort[^;]*;.*;cmp;hot_spin$')
unknown=$(t_fsum "$T_TMP/c.folded" 'unknown. .(/prof_qsort|prof_qsort)')
awk -v h="$hot" -v n="$total" 'BEGIN { exit !(n > 0 && h > 0.5 * n) }' &&
	t_pass "container: most samples on hot_spin, symbolized from the container's file ($hot of $total)" ||
	t_fail "container: most samples on hot_spin" "$hot of $total: $(head -c 400 "$T_TMP/c.folded")"
awk -v f="$full" -v h="$hot" 'BEGIN { exit !(h > 0 && f >= 0.9 * h) }' &&
	t_pass "container: main -> qsort (the container's libc) -> cmp -> hot_spin in $full of $hot" ||
	t_fail "container: full stacks" "$full of $hot hot_spin samples"
t_eq "container: no [unknown] frame of the workload" "0" "$unknown"
exit $T_FAILED
