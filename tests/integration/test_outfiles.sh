# Integration: every file ksight writes is created 0600 (umask 022 or not) and never through a planted symlink; a closed stdout or stderr never turns into the output file.
. tests/lib.sh
need_root outfiles

umask 022
R=$T_TMP/a.ksr
# 1. stderr closed while recording: fd 2 must not be the recording, so "tracing ... into" is not in it
"$KSIGHT" record -e raw_syscalls:sys_enter -e raw_syscalls:sys_exit -e sched:sched_switch -d 0.5 -o "$R" 2>&-
t_eq "record -o F 2>&-: exit 0" 0 "$?"
t_eq "record 2>&-: a valid recording" 0 "$("$KSIGHT" info "$R" >/dev/null 2>&1; echo $?)"
t_eq "record 2>&-: no diagnostics inside it" 0 "$(grep -ac 'ksight:' "$R")"
"$KSIGHT" record -e sched:sched_switch -d 0.3 -o "$T_TMP/b.ksr" 1>&- 2>"$T_TMP/b.err"
rc=$?
t_eq "record -o F 1>&-: exit 0, a valid recording" "0 0" "$rc $("$KSIGHT" info "$T_TMP/b.ksr" >/dev/null 2>&1; echo $?)"
t_eq "record 1>&-: its diagnostics still on stderr" 1 "$(grep -c 'tracing' "$T_TMP/b.err")"
t_eq "record 1>&-: none inside the recording" 0 "$(grep -ac 'ksight:' "$T_TMP/b.ksr")"
# both closed: the first files opened take 1 and 2, the recording among them
"$KSIGHT" record -e sched:sched_switch -d 0.3 -o "$T_TMP/c.ksr" 1>&- 2>&-
rc=$?
t_eq "record -o F 1>&- 2>&-: exit 0, a valid recording" "0 0" "$rc $("$KSIGHT" info "$T_TMP/c.ksr" >/dev/null 2>&1; echo $?)"
t_eq "record 1>&- 2>&-: no diagnostics inside it" 0 "$(grep -ac 'ksight:' "$T_TMP/c.ksr")"
t_eq "record: mode 0600 under umask 022" 600 "$(stat -c %a "$R")"

# two folded profiles for diff --svg
printf 'main;a 10\nmain;b 5\n' >"$T_TMP/pa.folded"
printf 'main;a 3\nmain;b 9\n' >"$T_TMP/pb.folded"
# Every command that writes a file, as NAME|ARGS (OUT stands for the output path).
CMDS="
syscalls --heatmap|syscalls -i 0.2 -d 0.3 --heatmap OUT
diff --svg|diff --svg OUT $T_TMP/pa.folded $T_TMP/pb.folded
record|record -e sched:sched_switch -d 0.2 -o OUT
report -o|report -o OUT $R
report --perfetto|report --perfetto OUT $R
report --pair -o|report --pair raw_syscalls:sys_enter/raw_syscalls:sys_exit --key common_pid -o OUT $R
info -o|info -o OUT $R
diff -o|diff -o OUT $R $R
list -o|list -o OUT sched:sched_sw*
"
while IFS='|' read -r name args; do
	[ -n "$name" ] || continue
	# 2. a new file: 0600 whatever the umask
	out=$T_TMP/new.$(echo "$name" | tr -dc a-z)
	# shellcheck disable=SC2086
	"$KSIGHT" $(echo "$args" | sed "s|OUT|$out|") >/dev/null 2>"$out.err"
	t_eq "$name: a new file, exit 0, mode 0600" "0 600" "$? $(stat -c %a "$out" 2>&1)"
	# an existing file others may read is made 0600 before anything is written into it
	echo old >"$out" && chmod 644 "$out"
	# shellcheck disable=SC2086
	"$KSIGHT" $(echo "$args" | sed "s|OUT|$out|") >/dev/null 2>"$out.err"
	t_eq "$name: an existing 0644 file, exit 0, made 0600" "0 600" "$? $(stat -c %a "$out" 2>&1)"
	# 3. a symlink planted at the output's name: refused, its target untouched
	victim=$out.victim
	link=$out.link
	echo "the test's own file" >"$victim" && chmod 644 "$victim"
	before=$(md5sum <"$victim")
	ln -s "$victim" "$link"
	# shellcheck disable=SC2086
	"$KSIGHT" $(echo "$args" | sed "s|OUT|$link|") >/dev/null 2>"$link.err"
	rc=$?
	t_eq "$name onto a symlink: refused (exit non-zero), one error line naming it" "true 1 1" \
		"$([ $rc -ne 0 ] && echo true || echo "false (exit 0)") $(grep -c 'error:' "$link.err") $(grep -c 'symbolic link' "$link.err")"
	t_eq "$name onto a symlink: the target untouched (content, mode 644)" "$before 644" "$(md5sum <"$victim") $(stat -c %a "$victim")"
	t_eq "$name onto a symlink: still a symlink" "yes" "$([ -L "$link" ] && echo yes)"
done <<EOF2
$CMDS
EOF2
# 3. "-" is standard output for every output option: the same bytes as a file gets, and no file named "-"
D=$T_TMP/dash
KS=$(readlink -f "$KSIGHT") # run from $D
mkdir -p "$D"
while IFS='|' read -r name args; do
	[ -n "$name" ] && [ "$name" != record ] || continue
	# the heatmap and the diff's flame graph share stdout with the report: not the file's bytes alone
	case $name in *--heatmap | *--svg) continue ;; esac
	# the report itself off stdout, which the timeline takes
	[ "$name" = "report --perfetto" ] && args="report -o /dev/null ${args#report }"
	# shellcheck disable=SC2086
	(cd "$D" && "$KS" $(echo "$args" | sed "s|OUT|$D/f|") >/dev/null 2>&1 &&
		"$KS" $(echo "$args" | sed "s|OUT|-|") >"$D/stdout" 2>"$D/err")
	t_eq "$name -: exit 0, the file's bytes on stdout, no file '-'" "0 same no" \
		"$? $(cmp -s "$D/f" "$D/stdout" && [ -s "$D/f" ] && echo same || echo differs) $([ -e "$D/-" ] && echo yes || echo no)"
	rm -f "$D/f" "$D/stdout" "$D/-"
done <<EOF3
$CMDS
EOF3
# a workload of its own (-- CMD): ksight makes no syscall inside its window, and a quiet machine
# may make none in 0.3 s (CI's did: rows [])
(cd "$D" && "$KS" syscalls -j -o - -- /bin/true 2>/dev/null | jq -e '.collector == "syscalls" and (.rows | length) > 0' >/dev/null)
t_eq "syscalls -j -o -: the JSON report on stdout (jq reads it), no file '-'" "0 no" "$? $([ -e "$D/-" ] && echo yes || echo no)"
(cd "$D" && "$KS" syscalls --stacks -d 0.3 --svg - 2>/dev/null | grep -c '</svg>' >"$D/n")
t_eq "syscalls --stacks --svg -: the flame graph on stdout, no file '-'" "1 no" "$(cat "$D/n") $([ -e "$D/-" ] && echo yes || echo no)"
for c in "record -e sched:sched_switch" "rerun $R"; do
	# shellcheck disable=SC2086
	(cd "$D" && "$KS" $c -d 0.2 -o - >"$D/rec.out" 2>"$D/rec.err")
	t_eq "${c%% *} -o -: refused (exit 2, one line, nothing on stdout), no file '-'" "2 1 0 no" \
		"$? $(wc -l <"$D/rec.err") $(wc -c <"$D/rec.out") $([ -e "$D/-" ] && echo yes || echo no)"
done
# both outputs of one report are opened before either is emptied: a refused timeline leaves -o's file as it was
echo "keep me" >"$T_TMP/keep.txt"
ln -s "$T_TMP/keep.victim" "$T_TMP/tl.link"
"$KSIGHT" report -o "$T_TMP/keep.txt" --perfetto "$T_TMP/tl.link" "$R" 2>/dev/null
t_eq "report -o F --perfetto LINK: exit 1, F as it was" "1 keep me" "$? $(cat "$T_TMP/keep.txt")"
t_no_leaks ks_record
exit $T_FAILED
