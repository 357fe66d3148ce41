# Integration: each collector reports the hook it chose (-v, JSON), and it is the best one `doctor` finds on this kernel.
. tests/lib.sh
need_root hooks

# Collectors and their hook variants, best first, as their sources try them; the
# arguments make a short run. A new collector adds one line.
COLLECTORS='
syscalls|-p 1|tp_btf raw_tp tp
'

# The doctor's name of a hook variant.
feature_of() {
	case $1 in
	tp) echo tracepoint ;;
	*) echo "$1" ;;
	esac
}

# Doctor's status of feature $1 ("OK", "WARN", "MISSING" or empty): from `doctor -j`
# when it writes the JSON document, else from its text, in either column order.
"$KSIGHT" doctor -j >"$T_TMP/doctor.json" 2>/dev/null
if jq -e '.checks | type == "array"' "$T_TMP/doctor.json" >/dev/null 2>&1; then
	feature_status() { jq -r --arg n "$1" '.checks[] | select(.name == $n) | .status' "$T_TMP/doctor.json"; }
else
	"$KSIGHT" doctor >"$T_TMP/doctor.txt" 2>/dev/null
	feature_status() {
		awk -v n="$1" '$1 == n && $2 ~ /^[A-Z]+$/ {print $2; exit} $2 == n && $1 ~ /^[A-Z]+$/ {print $1; exit}' \
			"$T_TMP/doctor.txt"
	}
fi

# What this kernel must offer, when the kernel matrix says (tests/kernels/*.conf)
if [ -n "${KSIGHT_EXPECT_FEATURES:-}" ]; then
	for f in $KSIGHT_EXPECT_FEATURES; do
		t_eq "doctor: $f available on ${KSIGHT_KERNEL:-this kernel}" OK "$(feature_status "$f")"
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
		if [ "$(feature_status "$(feature_of "$h")")" = OK ]; then
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
	t_eq "$col: JSON hook is the best available of: $hooks" "$want" "$(jq -r .hook "$T_TMP/$col.json")"
	t_eq "$col: -v names the hook" "ksight: hook: $want" \
		"$(grep '^ksight: hook: ' "$T_TMP/$col.err" | sed 's/ (fallback)$//')"
	t_eq "$col: the start line names the hook" "1" "$(grep -c "^ksight: tracing $col (hook $want)" "$T_TMP/$col.err")"
done <<EOF
$COLLECTORS
EOF
