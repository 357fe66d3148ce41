# Integration: profile outputs in a real browser: speedscope (npm, in headless Chromium) imports ksight's folded and pprof files and finds hot_spin under qsort's cmp; the SVG flame graph opens in Chromium without script errors and shows the frames.
. tests/lib.sh
need_root profile_browser
NODE_DIR=${KS_NODE_DIR:-/var/cache/ksight-node}
INDEX=$NODE_DIR/node_modules/speedscope/dist/release/index.html
if ! command -v chromium >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1 || [ ! -f "$INDEX" ] ||
	[ ! -d "$NODE_DIR/node_modules/playwright-core" ]; then
	t_skip "profile in a browser" "needs chromium, node and speedscope + playwright-core in $NODE_DIR (scripts/setup.sh)"
	exit 0
fi
chk() { NODE_PATH=$NODE_DIR/node_modules timeout 120 node tests/integration/chromium_check.js "$@"; }

# a short dwarf profile of prof_qsort: hot_spin through libc's qsort and cmp
"$WORKLOADS/prof_qsort" 3 -g >"$T_TMP/q.out" &
Q=$!
T_CLEANUP="kill $Q 2>/dev/null"
t_wait_for "$T_TMP/q.out" ready || { t_fail "workload" "did not start"; exit 1; }
k_start profile -p "$Q" -F 99 --call-graph dwarf -o "$T_TMP/p.folded" --pprof "$T_TMP/p.pb.gz" --svg "$T_TMP/p.svg"
kill -USR1 $Q
wait $Q
wait "$K_PID"
t_eq "profile: exit 0" "0" "$?"
samples=$(awk '{ n += $NF } END { print n + 0 }' "$T_TMP/p.folded")

for f in p.folded p.pb.gz; do
	if chk speedscope "$INDEX" "$T_TMP/$f" >"$T_TMP/ss.out" 2>"$T_TMP/ss.err"; then
		t_pass "speedscope: imports $f ($(awk '/^format/ { $1 = ""; print }' "$T_TMP/ss.out" | sed 's/^ //'))"
	else
		t_fail "speedscope: imports $f" "$(cat "$T_TMP/ss.err")"
		continue
	fi
	t_ok "speedscope: $f has hot_spin, cmp and main among its frames" \
		sh -c "grep -qx 'frame hot_spin' '$T_TMP/ss.out' && grep -qx 'frame cmp' '$T_TMP/ss.out' && grep -qx 'frame main' '$T_TMP/ss.out'"
	[ "$f" = p.folded ] && t_eq "speedscope: the folded file's weight is the samples" "$samples" \
		"$(awk '/^profiles/ { print $4 }' "$T_TMP/ss.out")"
done

# the SVG flame graph in Chromium: its script runs without errors and every frame has its title
if chk svg "$T_TMP/p.svg" "$T_TMP/p.png" >"$T_TMP/svg.out" 2>"$T_TMP/svg.err"; then
	t_eq "svg in chromium: no script errors" "0" "$(awk '/^titles/ { print $4 }' "$T_TMP/svg.out")"
	grep -q '^title hot_spin ' "$T_TMP/svg.out" && t_pass "svg in chromium: hot_spin's frame is there" ||
		t_fail "svg in chromium: hot_spin's frame" "$(head -5 "$T_TMP/svg.out")"
	# a screenshot of a drawn flame graph is tens of kB; a blank page is a few hundred bytes
	t_ok "svg in chromium: the screenshot shows a drawing ($(wc -c <"$T_TMP/p.png") bytes)" test "$(wc -c <"$T_TMP/p.png")" -gt 5000
else
	t_fail "svg in chromium" "$(cat "$T_TMP/svg.err")"
fi
exit $T_FAILED
