# Integration: `ksight list` reads tracepoints and their formats from tracefs, mounting it when absent.
. tests/lib.sh
need_root list

out=$T_TMP/list.txt

"$KSIGHT" list sched:sched_switch -v >"$out"
t_eq "sched_switch -v: exit 0" "0" "$?"
t_eq "sched_switch -v: the event line" "sched:sched_switch" "$(head -1 "$out")"
t_eq "sched_switch -v: prev_state with its type" "long prev_state" "$(awk '$2=="prev_state" {print $1, $2}' "$out")"
t_eq "sched_switch -v: next_pid with its type" "pid_t next_pid" "$(awk '$2=="next_pid" {print $1, $2}' "$out")"
grep -q 'next_pid .*offset:[0-9][0-9]* *size:4 ' "$out"
t_eq "sched_switch -v: offset and size" "0" "$?"

"$KSIGHT" list sched:sched_switch -v -j >"$out"
t_eq "json: fields with types" "long pid_t" \
	"$(jq -r '.events[0].fields | map(select(.name=="prev_state" or .name=="next_pid")) | map(.type) | join(" ")' "$out")"
t_eq "json: size and sign of next_pid" "4 true" "$(jq -r '.events[0].fields[] | select(.name=="next_pid") | "\(.size) \(.signed)"' "$out")"
t_eq "json: event id as in tracefs" "$(cat "$(awk '$3=="tracefs" {print $2; exit}' /proc/mounts)/events/sched/sched_switch/id")" \
	"$(jq '.events[0].id' "$out")"

"$KSIGHT" list 'sched:*' >"$out"
t_eq "sched:* lists wakeup, switch, migrate" "3" "$(grep -cx 'sched:sched_wakeup\|sched:sched_switch\|sched:sched_migrate_task' "$out")"
t_eq "sched:* lists only sched" "0" "$(grep -vc '^sched:' "$out")"
"$KSIGHT" list 'block:block_rq_*' >"$out"
grep -qx 'block:block_rq_issue' "$out" && grep -qx 'block:block_rq_complete' "$out"
t_eq "block:block_rq_* lists issue and complete" "0" "$?"
"$KSIGHT" list sched_wakeup_new >"$out"
t_eq "a bare event name is looked up in every system" "sched:sched_wakeup_new" "$(cat "$out")"

"$KSIGHT" list 'nomatch:*' >"$out" 2>"$out.err"
t_eq "no match: exit 1" "1" "$?"
grep -q "no tracepoint matches 'nomatch:\*'" "$out.err"
t_eq "no match: says so" "0" "$?"
"$KSIGHT" list a b >/dev/null 2>&1
t_eq "two globs: exit 2" "2" "$?"
"$KSIGHT" list --nope >/dev/null 2>&1
t_eq "unknown option: exit 2" "2" "$?"

# tracefs absent: in a private mount namespace, unmount it; list works and leaves no mount behind
# (ksight mounts it in a mount namespace of its own, gone with the process)
if command -v unshare >/dev/null 2>&1; then
	res=$(unshare -m --propagation private sh -c '
		for m in $(awk "\$3==\"tracefs\" {print \$2}" /proc/mounts | sort -r); do umount "$m" || exit 3; done
		grep -q " tracefs " /proc/mounts && exit 3
		'"$KSIGHT"' list sched:sched_switch 2>'"$T_TMP/absent.err"' | head -1 || exit 4
		grep -q " tracefs " /proc/mounts && echo "left mounted" || echo "none left"')
	case $? in
	3) t_skip "tracefs absent" "cannot unmount tracefs in a private namespace" ;;
	*)
		t_eq "tracefs absent: list works, no mount left behind" "sched:sched_switch none left" "$(echo $res)"
		t_eq "tracefs absent: nothing on stderr without -v" "" "$(cat "$T_TMP/absent.err")"
		;;
	esac
else
	t_skip "tracefs absent" "no unshare"
fi

# no match: exit 1 and one line, with no NULL handed to qsort (UBSan aborts the sanitized build)
"$KSIGHT" list nosuchthing >"$out" 2>"$out.err"
t_eq "nosuchthing: exit 1, one error line" "1 1" "$? $(wc -l <"$out.err" | tr -d ' ')"
if [ -x build-san/ksight ]; then
	build-san/ksight list nosuchthing >/dev/null 2>"$out.err"
	t_eq "nosuchthing under ASan/UBSan: exit 1, no runtime error" "1 0" "$? $(grep -c 'runtime error' "$out.err")"
else
	t_skip "nosuchthing under ASan/UBSan" "no build-san/ksight (make san)"
fi
