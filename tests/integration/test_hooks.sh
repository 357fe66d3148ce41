# Integration: each collector reports the hook it chose (-v, JSON), and it is the best one `doctor` finds on this kernel.
. tests/lib.sh
need_root hooks

# Collectors and their hook variants, best first, as their sources try them; the
# arguments make a short run. A new collector adds one line (checked below against
# the collectors `ksight -h` lists).
COLLECTORS='
syscalls|-p 1|tp_btf raw_tp tp
runqlat|-p 1|tp_btf raw_tp
offcpu|-p 1|tp_btf raw_tp
wall|-p 1|tp_btf raw_tp
biolat|-p 1|tp_btf raw_tp tp
mem|-p 1|tp_btf raw_tp tp
tcp|-p 1|fentry tp_btf raw_tp tp kprobe
net|-p 1|tp_btf raw_tp
funclat|do_nanosleep -p 1|fentry kprobe
'

# The doctor's name of a hook variant.
feature_of() {
	case $1 in
	tp) echo tracepoint ;;
	*) echo "$1" ;;
	esac
}

# Every collector of the binary has a line in the table, but netflow: its hook (xdp or tc) is
# the one the user names (--xdp DEV, --tc DEV), not a variant chosen here (test_netflow checks it)
listed=$("$KSIGHT" -h 2>&1 | awk '/^Collectors:/ {c = 1; next} c && NF == 0 {c = 0} c && $1 != "netflow" {print $1}' | sort | tr '\n' ' ')
t_eq "the table lists every collector" "$listed" "$(echo "$COLLECTORS" | awk -F'|' 'NF {print $1}' | sort | tr '\n' ' ')"

# What this kernel must offer, when the kernel matrix says (tests/kernels/*.conf)
if [ -n "${KSIGHT_EXPECT_FEATURES:-}" ]; then
	for f in $KSIGHT_EXPECT_FEATURES; do
		t_eq "doctor: $f available on ${KSIGHT_KERNEL:-this kernel}" OK "$(k_feature "$f")"
	done
else
	t_skip "doctor: expected features" "none declared for this kernel (KSIGHT_EXPECT_FEATURES)"
fi

# The best variant doctor reports OK must be the one chosen: on Debian's 6.1 that is fentry
# or kprobe where a collector has one, on a kernel without them the next variant.
while IFS='|' read -r col args hooks; do
	[ -n "$col" ] || continue
	want=
	for h in $hooks; do
		if [ "$(k_feature "$(feature_of "$h")")" = OK ]; then
			want=$h
			break
		fi
	done
	if [ -z "$want" ]; then
		t_skip "$col: hook" "doctor finds none of its hooks ($hooks) on $(uname -r)"
		continue
	fi
	# shellcheck disable=SC2086
	"$KSIGHT" "$col" -v -j -d 1 $args >"$T_TMP/$col.json" 2>"$T_TMP/$col.err"
	t_eq "$col: a report with a hook, exit 0" "0 true" \
		"$? $(jq -e '.hook | type == "string" and length > 0' "$T_TMP/$col.json" 2>/dev/null)"
	t_eq "$col: JSON hook is the best available of: $hooks" "$want" "$(jq -r .hook "$T_TMP/$col.json")"
	t_eq "$col: -v names the hook" "ksight: hook: $want" \
		"$(grep '^ksight: hook: ' "$T_TMP/$col.err" | sed 's/ (.*//')"
	# a fallback says why each better variant was not taken
	first=${hooks%% *}
	if [ "$want" != "$first" ]; then
		t_ok "$col: -v says why $first was not taken" grep -q "^ksight: hook: $want ($first: [a-z]" "$T_TMP/$col.err"
	fi
	t_eq "$col: the start line names the hook" "1" "$(grep -c "^ksight: tracing $col (hook $want)" "$T_TMP/$col.err")"
done <<EOF
$COLLECTORS
EOF
