# Integration: serve and cgroups: 5,000 short-lived processes stay within --max-series (the fold counter says how many folded); pod labels from a Kubernetes cgroup layout.
. tests/lib.sh
need_root serve-cgroup
if ! command -v curl >/dev/null 2>&1; then
	t_skip serve-cgroup "no curl"
	exit 0
fi
cg2=$(awk '$3=="cgroup2" {print $2; exit}' /proc/mounts)
if [ -z "$cg2" ]; then
	t_skip serve-cgroup "no cgroup v2 mount"
	exit 0
fi
KIDS=5000 PAGES=8 CAP=100
cg=$cg2/ksight-card-$$
mkdir -p "$cg"
S_PID= G_PID=
T_CLEANUP='for p in $S_PID $G_PID; do kill -KILL $p 2>/dev/null; done; wait 2>/dev/null; rmdir "$cg" 2>/dev/null'

"$WORKLOADS/namefork" $KIDS $PAGES card >"$T_TMP/nf.out" &
G_PID=$!
t_wait_for "$T_TMP/nf.out" '^[0-9]'
echo "$G_PID" >"$cg/cgroup.procs"
"$KSIGHT" serve --collectors mem -c "$cg" --max-series $CAP --listen 127.0.0.1:0 -i 0.5 2>"$T_TMP/s.err" &
S_PID=$!
if ! t_wait_for "$T_TMP/s.err" "listening on"; then
	t_fail "serve starts" "$(cat "$T_TMP/s.err")"
	exit 1
fi
URL=$(sed -n 's|.*listening on \(http://[^ ]*\)|\1|p' "$T_TMP/s.err")
kill -USR1 "$G_PID"
T_WAIT=120 t_wait_for "$T_TMP/nf.out" "done"
t_eq "workload: $KIDS children ran" "done 0 $KIDS" "$(tail -1 "$T_TMP/nf.out")"
wait "$G_PID" 2>/dev/null
G_PID=
sleep 1.5
curl -s "$URL" >"$T_TMP/m.txt"
series=$(grep -c '^ksight_mem_faults_user_total{' "$T_TMP/m.txt")
t_ok "series of ksight_mem_faults_user_total within the cap: $series <= $((CAP + 1))" test "$series" -le $((CAP + 1))
t_eq "an \"other\" series holds the rest" 1 "$(grep -c '^ksight_mem_faults_user_total{comm="other"}' "$T_TMP/m.txt")"
folds=$(awk '/^ksight_other_folds_total\{collector="mem"\} / { print $2 }' "$T_TMP/m.txt")
# every name past the cap folded at least once (a name seen in two drains folds twice)
t_ok "fold counter: $folds >= $((KIDS + 1 - CAP)) folded rows" test "${folds:-0}" -ge $((KIDS + 1 - CAP))
# nothing is lost by folding: the faults of all series add up to at least the children's touches
total=$(awk '/^ksight_mem_faults_user_total\{/ { s += $2 } END { printf "%d", s }' "$T_TMP/m.txt")
t_ok "faults of every series (other included): $total >= $((KIDS * PAGES))" test "$total" -ge $((KIDS * PAGES))
kill -TERM "$S_PID"
wait "$S_PID"
t_eq "SIGTERM: exit 0" 0 $?
S_PID=
rmdir "$cg" 2>/dev/null

# k8s_pod_name, k8s_namespace_name and k8s_container_name labels: a process in a cgroup with Kubernetes' layout beside a /var/log/pods tree
N=5000
UID_=$(cat /proc/sys/kernel/random/uuid)
UIDU=$(echo "$UID_" | tr - _)
CID=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
# the systemd cgroup driver's layout, as kubelet and containerd make it (the path is longer than a row key holds)
top=$cg2/kubepods-ksight-$$.slice
cg=$top/kubepods-ksight-$$-burstable.slice/kubepods-burstable-pod$UIDU.slice/cri-containerd-$CID.scope
mkdir -p "$cg"
PODS=$T_TMP/pods
mkdir -p "$PODS/shop_web-7d9f_$UID_/nginx"
T_CLEANUP='[ -n "$S_PID" ] && kill -KILL $S_PID 2>/dev/null; [ -n "${W_PID:-}" ] && kill -KILL $W_PID 2>/dev/null; wait 2>/dev/null; rmdir "$cg" "$(dirname "$cg")" "$(dirname "$(dirname "$cg")")" "$top" 2>/dev/null'

w_start -n $N
echo "$W_PID" >"$cg/cgroup.procs"
"$KSIGHT" serve --collectors syscalls --by syscalls=cgroup,syscall -c "$cg" --pods-dir "$PODS" --listen 127.0.0.1:0 2>"$T_TMP/s.err" &
S_PID=$!
if ! t_wait_for "$T_TMP/s.err" "listening on"; then
	t_fail "serve starts" "$(cat "$T_TMP/s.err")"
	exit 1
fi
URL=$(sed -n 's|.*listening on \(http://[^ ]*\)|\1|p' "$T_TMP/s.err")
w_go
line=
for _ in $(seq 1 40); do
	line=$(curl -s "$URL" | grep '^ksight_syscalls_calls_total{.*syscall="getppid"')
	[ -n "$line" ] && [ "${line##* }" = $N ] && break
	sleep 0.25
done
t_eq "getppid count of the pod's process" $N "${line##* }"
t_ok "labels: k8s_namespace_name, k8s_pod_name, k8s_container_name" sh -c "echo '$line' | grep -q 'k8s_namespace_name=\"shop\",k8s_pod_name=\"web-7d9f\",k8s_container_name=\"nginx\"'"
t_ok "cgroup label: the whole path (${#cg} bytes), not the row key's cut one" sh -c "echo '$line' | grep -qF 'cgroup=\"${cg#"$cg2"}\"'"
t_ok "labels: pod_uid and container_id from the cgroup path" sh -c "echo '$line' | grep -q 'container_id=\"containerd://$CID\",pod_uid=\"$UID_\"'"
kill -TERM "$S_PID"
wait "$S_PID"
t_eq "SIGTERM: exit 0" 0 $?
S_PID=
exit $T_FAILED
