# Integration: `ksight wall`'s on-CPU split into user and system time (against /proc's utime and stime) and its text table's shares.
. tests/lib.sh
need_root wall

# split MODE: wallsplit spinning 1 s in MODE (user, sys) under `wall -- CMD`; prints "ONCPU
# CPU_USER CPU_SYS PROC_USER PROC_SYS" (ns; the last two /proc/self/stat's utime and stime,
# read by the thread at its end, in clock ticks of 1/CLK_TCK s, truncated)
TICK_NS=$((1000000000 / $(getconf CLK_TCK)))
split() {
	t_name split
	"$KSIGHT" wall -j -d 20 -o "$T_NAME.json" -- "$WORKLOADS/wallsplit" "$1" 1000 >"$T_NAME.out" 2>"$T_NAME.err"
	read -r _tid _ut _st <"$T_NAME.out"
	jq -r --arg t "$_tid" '.rows[] | select(.tid == ($t | tonumber)) | "\(.oncpu_ns) \(.cpu_user_ns) \(.cpu_sys_ns)"' \
		"$T_NAME.json" | awk -v u="$_ut" -v s="$_st" -v k="$TICK_NS" '{ print $0, u * k, s * k }'
}

# scheck DESC AWK_CONDITION GOT: the condition on split's line (on, user, sys, pu, ps)
scheck() {
	echo "$3" | awk "{ on = \$1; user = \$2; sys = \$3; pu = \$4; ps = \$5 }
		function abs(x) { return x < 0 ? -x : x }
		END { exit !(NF == 5 && \$0 ~ /^[0-9 ]+$/ && on > 0 && ($2)) }" &&
		t_pass "$1" || t_fail "$1" "oncpu cpu_user cpu_sys proc_utime proc_stime (ns): $3"
}

# --- user and system: they add up to on-CPU exactly, in the shares the kernel's utime and stime
# give (/proc's are whole ticks, each truncated: within two ticks and 3% of on-CPU time)
for m in user sys; do
	got=$(split $m)
	scheck "$m spin: cpu_user + cpu_sys == oncpu" "user + sys == on" "$got"
	scheck "$m spin: cpu_user against /proc's utime" "abs(user - pu) <= 2 * $TICK_NS + 0.03 * on" "$got"
	[ $m = user ] && scheck "user spin: at least 90% user" "user >= 0.9 * on" "$got"
	[ $m = sys ] && scheck "getppid spin: at least half system" "sys >= 0.5 * on" "$got"
done

# --- the text table: each state also as its share of the row's total, adding up to 100.0
t_name text
"$KSIGHT" wall -n 0 -d 20 -o "$T_NAME" -- "$WORKLOADS/wallsplit" user 300 >/dev/null 2>&1
# the header names each share column "%"; every row's shares sum to 100.0 (in tenths: exactly 1000)
awk 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "%") c[++n] = i; next }
	NF > n && $1 ~ /^[0-9]+$/ { s = 0; for (j = 1; j <= n; j++) s += $(c[j] + 1 - 1) * 10; rows++
		if (int(s + 0.5) != 1000) bad = bad " " $1 ":" s }
	END { exit !(n == 10 && rows > 0 && bad == "") }' "$T_NAME" &&
	t_pass "text: ten state shares per row, adding up to 100.0" ||
	t_fail "text: ten state shares per row, adding up to 100.0" "$(head -3 "$T_NAME")"

[ "$T_FAILED" = 0 ]
