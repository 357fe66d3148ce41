#!/bin/bash
# Benchmark: `ksight report --html` on a record --collect recording of SECS seconds at -i 1 with several collectors under a busy workload: the report's wall time, the page's bytes, and Chromium's time to load it (goal, issue 26: 300 s and six collectors in < 2 s, < 5 MB, open in < 1 s).
# Root; run from the repo.  SECS (default 60), COLLECT (default syscalls,runqlat,offcpu,biolat,mem,tcp), ROUNDS of the report (default 3, median);
# REC=FILE reads that recording instead of making one, KEEP=DIR keeps the recording and the page there.
set -u
SECS=${SECS:-60}
COLLECT=${COLLECT:-syscalls,runqlat,offcpu,biolat,mem,tcp}
ROUNDS=${ROUNDS:-3}
KSIGHT=${KSIGHT:-./ksight}
NODE_DIR=${KS_NODE_DIR:-/var/cache/ksight-node}
TMP=$(mktemp -d /tmp/ksight-bench-html.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# a mixed load for SECS seconds: 1 ms then 20 ms sleeps (hm_phases), a directory walk, page cache I/O, so each collector has rows
load="build/workloads/hm_phases $((SECS / 2)) $((SECS - SECS / 2)) >/dev/null &
end=\$((\$(date +%s) + $SECS)); while [ \$(date +%s) -lt \$end ]; do dd if=/dev/zero of=$TMP/dd bs=64k count=64 conv=fsync 2>/dev/null; ls -R /usr/lib >/dev/null; sleep 0.2; done; wait"
if [ -n "${REC:-}" ]; then
	cp "$REC" "$TMP/r.ksr" || exit 1
else
	"$KSIGHT" record --collect "$COLLECT" -i 1 -o "$TMP/r.ksr" -- sh -c "$load" 2>"$TMP/rec.err" ||
		{ echo "bench: record failed: $(tail -1 "$TMP/rec.err")" >&2; exit 1; }
fi
echo "recording: ${REC:-$SECS s, $COLLECT at -i 1}: $(stat -c %s "$TMP/r.ksr") bytes, $("$KSIGHT" info -j "$TMP/r.ksr" | jq '[.collectors[].intervals] | add') interval reports"
for r in $(seq "$ROUNDS"); do
	s=$(date +%s%N)
	"$KSIGHT" report "$TMP/r.ksr" --html "$TMP/r.html" || exit 1
	echo $((($(date +%s%N) - s) / 1000000))
done >"$TMP/ms"
echo "report --html: median $(median <"$TMP/ms") ms of $ROUNDS ($(tr '\n' ' ' <"$TMP/ms")), $(stat -c %s "$TMP/r.html") bytes, $(grep -c 'data-lo=' "$TMP/r.html") heatmap cells, $(grep -c '<g class="f"' "$TMP/r.html") flame graph frames"
grep -o '<text id="narrow"[^>]*>[^<]*' "$TMP/r.html" | sed 's/.*>/flame graph: /'
if [ -d "$NODE_DIR/node_modules/playwright-core" ]; then
	cat >"$TMP/open.js" <<'JS'
const { chromium } = require('playwright-core');
(async () => {
	const b = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu'] });
	const ms = [];
	for (let i = 0; i < 3; i++) {
		const p = await b.newPage({ viewport: { width: 1400, height: 900 } });
		const t = Date.now();
		await p.goto('file://' + process.argv[2], { waitUntil: 'load' });
		await p.evaluate(() => new Promise((r) => requestAnimationFrame(() => r())));
		ms.push(Date.now() - t);
		await p.close();
	}
	await b.close();
	console.log(ms.join(' '));
})();
JS
	echo "chromium load + first frame (ms, 3 opens): $(NODE_PATH=$NODE_DIR/node_modules node "$TMP/open.js" "$TMP/r.html")"
fi
[ -n "${KEEP:-}" ] && mkdir -p "$KEEP" && cp "$TMP/r.ksr" "$TMP/r.html" "$KEEP/"
exit 0
