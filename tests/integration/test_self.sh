# Integration: ksight leaves its own events out of its reports (a kernel-side filter on its tgid) unless --include-self.
. tests/lib.sh
need_root self

# self_rows COLLECTOR [ARGS]: "PID ROWS", ksight's pid and how many of its rows name it
self_rows() {
	_c=$1; shift
	"$KSIGHT" "$_c" --by pid -j -d 0.6 -i 0.2 -n 0 "$@" >"$T_TMP/$_c.json" 2>"$T_TMP/$_c.err" &
	_p=$!
	wait $_p
	echo "$? $_p $(jq -s --argjson p "$_p" '[.[].rows[]? | select(.pid == $p)] | length' "$T_TMP/$_c.json")"
}

# syscalls: ksight reads its maps with bpf() and sleeps with clock_nanosleep every interval;
# offcpu: it sleeps between reports
for c in syscalls offcpu; do
	set -- $(self_rows $c)
	t_eq "$c: exit 0, no row of ksight's own pid $2" "0 0" "$1 $3"
	set -- $(self_rows $c --include-self)
	if [ "$1" = 0 ] && [ "${3:-0}" -gt 0 ]; then
		t_pass "$c --include-self: ksight's own pid $2 has rows"
	else
		t_fail "$c --include-self: ksight's own pid $2 has rows" "exit $1, $3 rows"
	fi
done
# by syscall, -L too: a return with no start of its own (counted without a latency) must not
# bring ksight's calls back. ksight runs in a cgroup of its own and filters on it, so no other
# process's bpf() (a shared machine) can show: every bpf() seen would be ksight's.
cg2=$(awk '$3=="cgroup2" {print $2; exit}' /proc/mounts)
if [ -z "$cg2" ]; then
	t_skip "syscalls by syscall: no bpf() row" "no cgroup v2 mount"
else
	cg=$cg2/ksight-self-$$
	mkdir "$cg"
	for m in "" -L; do
		sh -c 'echo $$ >"$1/cgroup.procs"; shift; exec "$@"' sh "$cg" \
			"$KSIGHT" syscalls $m -c "$cg" -i 0.2 -d 1 -n 0 -j >"$T_TMP/sc.json" 2>/dev/null
		t_eq "syscalls $m by syscall: no bpf() row (ksight's own)" "0" \
			"$(jq -s '[.[].rows[] | select(.syscall == "bpf")] | length' "$T_TMP/sc.json")"
		# and the filter did let calls through: the cgroup is not empty of events by mistake
		t_eq "syscalls $m: --include-self in its own cgroup sees its bpf()" "yes" \
			"$(sh -c 'echo $$ >"$1/cgroup.procs"; shift; exec "$@"' sh "$cg" \
				"$KSIGHT" syscalls $m --include-self -c "$cg" -i 0.2 -d 1 -n 0 -j 2>/dev/null |
				jq -s 'if [.[].rows[] | select(.syscall == "bpf")] | length > 0 then "yes" else "no" end' -r)"
	done
	rmdir "$cg" 2>/dev/null
fi
# the filter report does not claim a filter the user did not give
t_eq "no 'filters' entry for the self filter" "{}" "$(jq -s -c '.[0].filters' "$T_TMP/offcpu.json")"
exit $T_FAILED
