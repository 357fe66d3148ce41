# Integration: pprof and SVG files other tools read: go tool pprof -raw/-list/-disasm on a -g workload (mappings, build IDs, addresses, lines, pid/tid), a decode by the pprof-format npm package, the SVG's labels drawn without script (rsvg-convert) and its search by keyboard in Chromium.
. tests/lib.sh
need_root profile_pprof
export HOME=${HOME:-/root}
NODE_DIR=${KS_NODE_DIR:-/var/cache/ksight-node}
# the source as the workload's DWARF names it (its compilation directory's): a build tree copied from
# another checkout names that one's, and this one's path failed the two file-and-line checks
SRC=$(readelf --debug-dump=info "$WORKLOADS/prof_src" 2>/dev/null | awk '/DW_AT_comp_dir/ { print $NF; exit }')
SRC=${SRC:-$(pwd)}/tests/workloads/prof_src.c
BIN=$(cd "$WORKLOADS" && pwd)/prof_src
# the build ID as the file's own note gives it (readelf, binutils)
BID=$(readelf -n "$BIN" | awk '/Build ID:/ { print $3 }')

# pp_hot spins in pp_mix, inlined into it: 4 s, profiled for 2
"$BIN" 4 >"$T_TMP/w.out" &
W=$!
T_CLEANUP="kill $W 2>/dev/null"
t_wait_for "$T_TMP/w.out" ready || { t_fail "workload" "did not start"; exit 1; }
k_start profile -p "$W" -F 199 -d 2 -o "$T_TMP/p.folded" --pprof "$T_TMP/p.pb.gz" --svg "$T_TMP/p.svg"
wait "$K_PID"
t_eq "profile: exit 0" "0" "$?"
wait $W
samples=$(awk '{ n += $NF } END { print n + 0 }' "$T_TMP/p.folded")

if command -v go >/dev/null 2>&1; then
	go tool pprof -raw "$T_TMP/p.pb.gz" >"$T_TMP/raw" 2>"$T_TMP/raw.err"
	t_eq "go tool pprof -raw: exit 0" 0 $?
	# Mappings: "ID: START/LIMIT/OFFSET FILE BUILDID [FN]..."
	t_ok "pprof: a mapping of the workload with its build ID $BID" \
		grep -Eq "^[0-9]+: 0x[0-9a-f]+/0x[0-9a-f]+/0x[0-9a-f]+ $BIN $BID " "$T_TMP/raw"
	t_ok "pprof: the kernel's mapping [kernel.kallsyms]" grep -Eq '^[0-9]+: 0xffff[0-9a-f]+/0x[0-9a-f]+/0x0 \[kernel\.kallsyms\]' "$T_TMP/raw"
	# Locations: "ID: 0xADDR M=N FUNC FILE:LINE s=0", the inlined call first, then its caller's line
	t_ok "pprof: pp_mix inlined in pp_hot at a real address, with file and line" \
		awk -v f="$SRC" '$2 ~ /^0x4[0-9a-f]+$/ && $3 ~ /^M=[1-9]/ && $4 == "pp_mix" && index($5, f ":") == 1 { m = 1; next }
			m && $1 == "pp_hot" && $2 == f ":" '"$(grep -n PP_CALL_LINE "$SRC" | head -1 | cut -d: -f1)"' { ok = 1 } { m = 0 } END { exit !ok }' "$T_TMP/raw"
	t_ok "pprof: no location at address 0 in the workload (every user frame has its address)" \
		sh -c "! grep -Eq '^ +[0-9]+: 0x0 M=' '$T_TMP/raw'"
	t_ok "pprof: samples carry pid:[$W] and tid:[$W]" grep -q "pid:\[$W\] tid:\[$W\]" "$T_TMP/raw"
	t_ok "pprof: Time and Duration (time_nanos, duration_nanos)" sh -c "grep -q '^Time: 20' '$T_TMP/raw' && grep -Eq '^Duration: [0-9]' '$T_TMP/raw'"
	t_ok "pprof: PeriodType cpu nanoseconds, Period 1e9/199" sh -c "grep -q '^PeriodType: cpu nanoseconds' '$T_TMP/raw' && grep -q '^Period: 5025125$' '$T_TMP/raw'"
	# -list reads the source by the functions' file names: the hot line, inside the inlined pp_mix, has samples
	go tool pprof -list '^pp_mix$' "$T_TMP/p.pb.gz" >"$T_TMP/list" 2>"$T_TMP/list.err"
	t_ok "go tool pprof -list pp_mix: the loop's line (PP_MIX_LINE) has samples" \
		awk '/PP_MIX_LINE/ && ($1 != "." || $2 != ".") { ok = 1 } END { exit !ok }' "$T_TMP/list"
	# -disasm reads the binary at the mapping's addresses: pp_hot's instructions, some with samples
	go tool pprof -disasm pp_hot "$T_TMP/p.pb.gz" >"$T_TMP/dis" 2>"$T_TMP/dis.err"
	t_ok "go tool pprof -disasm pp_hot: instructions with samples" \
		awk '/ROUTINE/ { r = 1 } r && $1 ~ /s$/ && $3 ~ /^40[0-9a-f]+:$/ { ok = 1 } END { exit !ok }' "$T_TMP/dis"
else
	t_skip "go tool pprof" "go not installed (scripts/setup.sh installs golang-go)"
fi

if command -v node >/dev/null 2>&1 && [ -d "$NODE_DIR/node_modules/pprof-format" ]; then
	NODE_PATH=$NODE_DIR/node_modules node tests/integration/pprof_decode.js "$T_TMP/p.pb.gz" >"$T_TMP/dec" 2>"$T_TMP/dec.err"
	t_eq "pprof-format decodes the profile" 0 $?
	t_ok "pprof-format: the workload's mapping and build ID" grep -Eq "^mapping 0x[0-9a-f]+ 0x[0-9a-f]+ 0x[0-9a-f]+ $BIN $BID$" "$T_TMP/dec"
	t_ok "pprof-format: pp_mix's location names $SRC with a line" grep -Eq "^location 0x4[0-9a-f]+ [1-9][0-9]* pp_mix:$SRC:[1-9]" "$T_TMP/dec"
	t_ok "pprof-format: labels pid and tid" sh -c "grep -qx 'label pid' '$T_TMP/dec' && grep -qx 'label tid' '$T_TMP/dec'"
	t_ok "pprof-format: time_nanos and duration_nanos set (>= 1.9 s)" \
		awk '/^time / { t = $2 } /^duration / { d = $2 } END { exit !(t > 1.7e18 && d >= 1.9e9) }' "$T_TMP/dec"
else
	t_skip "pprof-format" "needs node and pprof-format in $NODE_DIR (scripts/setup.sh)"
fi

# SVG: labels in the file, so a renderer that runs no script draws them; samples called samples; no prompt()
t_ok "svg: pp_hot's label is text in the file" grep -q '<text x="[0-9.]*" y="[0-9]*">pp_hot</text>' "$T_TMP/p.svg"
t_ok "svg: the title counts $samples samples" grep -q "Flame graph ($samples samples)" "$T_TMP/p.svg"
t_ok "svg: search without prompt()" sh -c "! grep -q 'prompt(' '$T_TMP/p.svg'"
if command -v rsvg-convert >/dev/null 2>&1; then
	# the same file with the frames' labels emptied (not the root's "all"): drawn without script, the two must differ
	sed '/^<g class="f"/ s|\(<text x="[0-9.]*" y="[0-9]*">\)[^<]*</text></g>|\1</text></g>|' "$T_TMP/p.svg" >"$T_TMP/bare.svg"
	rsvg-convert "$T_TMP/p.svg" -o "$T_TMP/p.png" && rsvg-convert "$T_TMP/bare.svg" -o "$T_TMP/bare.png"
	t_ok "svg: rsvg-convert (no script) draws the labels (the render differs from the label-less one)" \
		sh -c "! cmp -s '$T_TMP/p.png' '$T_TMP/bare.png'"
else
	t_skip "svg: rsvg-convert" "not installed (librsvg2-bin, scripts/setup.sh)"
fi
if command -v chromium >/dev/null 2>&1 && [ -d "$NODE_DIR/node_modules/playwright-core" ]; then
	NODE_PATH=$NODE_DIR/node_modules timeout 120 node tests/integration/chromium_check.js svgsearch "$T_TMP/p.svg" pp_m >"$T_TMP/ss" 2>"$T_TMP/ss.err"
	t_eq "svg in chromium: '/' then typing pp_m highlights pp_mix, no dialog" "matched 1 dialogs 0" \
		"$(awk '/^highlighted/ { h = $2 } /^dialogs/ { d = $2 } END { print "matched " h " dialogs " d }' "$T_TMP/ss")"
	t_ok "svg in chromium: the matched share is told in samples" grep -q '^text Matched: .*% ([0-9]* samples)$' "$T_TMP/ss"
	t_eq "svg in chromium: a click zooms the narrowest frame to the whole width, its label whole" "zoomed 1200 label" \
		"$(grep '^zoomed' "$T_TMP/ss")"
else
	t_skip "svg in chromium" "needs chromium and playwright-core in $NODE_DIR (scripts/setup.sh)"
fi
exit $T_FAILED
