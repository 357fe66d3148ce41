# Integration: report --html on a record --collect syscalls,runqlat -i 1 recording of a command with known sleeps (1 ms, then 20 ms) run under a hostile name: one self-contained page; in Chromium no console error, no request, no dialog; the table holds the command's exact count; the heatmap's cells are coloured where its sleeps lie; the name and note are escaped.
. tests/lib.sh
need_root report_html

F=$T_TMP/s.ksr
H=$T_TMP/s.html
# the command under a name that is HTML (its comm and the manifest's command line carry it)
BAD='<img src=x onerror=alert(1)>'
mkdir "$T_TMP/bin" && ln -s "$(cd "$WORKLOADS" && pwd)/hm_phases" "$T_TMP/bin/$BAD"
NOTE='<script>alert(2)</script> "p99" & '"$(printf 'caf\303\251 \377')"
"$KSIGHT" record --collect syscalls,runqlat -i 1 --note "$NOTE" -o "$F" -- "$T_TMP/bin/$BAD" 1.2 1.2 \
	>"$T_TMP/w.out" 2>"$T_TMP/rec.err"
t_eq "record --collect syscalls,runqlat -i 1 -- CMD: exit 0" "0" "$?"
"$KSIGHT" report "$F" --html "$H" >"$T_TMP/rep.out" 2>"$T_TMP/rep.err"
t_eq "report --html: exit 0, nothing on stdout or stderr" "0||" "$?|$(cat "$T_TMP/rep.out")|$(cat "$T_TMP/rep.err")"
# the command's own sleeps: one clock_nanosleep each ("s NS" and "l NS" lines)
SLEEPS=$(grep -c '^[sl] ' "$T_TMP/w.out")
t_eq "the whole-window JSON report counts the command's $SLEEPS sleeps" "$SLEEPS" \
	"$("$KSIGHT" report -j "$F" | jq -s '[.[] | select(.collector == "syscalls") | .rows[] | select(.syscall == "clock_nanosleep") | .count] | add')"

# the file itself: self-contained, strict policy, every stranger's byte quoted
t_ok "a Content-Security-Policy of default-src 'none'" grep -q "http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'" "$H"
t_eq "no script, no external reference (src=, href= other than #, url(), @import)" "0" \
	"$(grep -Eic '<script|src="|href="[^#]|url\(|@import' "$H")"
t_ok "the manifest's start and end (with the span) and the command line" grep -Eq '<th class="k">start</th><td>[0-9T:.-]+Z</td>.*<th class="k">end</th><td>[0-9T:.-]+Z \([0-9.]+ s\)</td>.*<th class="k">cmdline</th>' \
	"$(tr -d '\n' <"$H" >"$T_TMP/one.html"; echo "$T_TMP/one.html")"
t_eq "the hostile name never raw" "0" "$(grep -Fc "$BAD" "$H")"
t_ok "the hostile name quoted" grep -Fq '&lt;img src=x onerror=alert(1)&gt;' "$H"
t_ok "the note quoted, invalid UTF-8 as \\xff" grep -Fq '<blockquote class="note">&lt;script&gt;alert(2)&lt;/script&gt; &quot;p99&quot; &amp; café \xff</blockquote>' "$H"
t_eq "report --html refuses to write through a symbolic link" "1 0" \
	"$(ln -s "$T_TMP/victim" "$T_TMP/link.html"; "$KSIGHT" report "$F" --html "$T_TMP/link.html" 2>/dev/null; echo "$? $(test -e "$T_TMP/victim" && echo 1 || echo 0)")"
t_eq "--html with -j: bad usage (exit 2)" "2" "$("$KSIGHT" report "$F" --html "$T_TMP/x.html" -j >/dev/null 2>&1; echo $?)"

# hostile report chunks (their CRCs made right): the first interval's JSON replaced; one line, exit 2, OUT untouched
python3 - "$F" "$T_TMP/h" <<'PY' || t_fail "hostile report chunks" "the editor failed"
import os, sys, zlib
sys.path.insert(0, 'tests/integration')
from ksrec import CHUNK, HDR, crc32c
src, dst = sys.argv[1:3]
os.makedirs(dst)
data = open(src, 'rb').read()
JSON = {'notjson': b'{"rows": [', 'rowsnotarray': b'{"rows": 7}',
        'badbucket': b'{"rows": [{"syscall": "x", "latency_ns": {"buckets": [[1001, 1001, 5]]}}]}',
        'countwraps': b'{"rows": [{"latency_ns": {"buckets": [[1, 1, 18446744073709551615]]}}]}',
        'manykeys': b'{"rows": [{' + b','.join(b'"k%d": "v"' % i for i in range(9)) + b'}]}'}
for name, js in JSON.items():
    out, off, done = bytearray(data[:HDR]), HDR, False
    while off + CHUNK.size <= len(data):
        f = list(CHUNK.unpack_from(data, off))
        p = data[off + CHUNK.size: off + CHUNK.size + f[8]]
        off += CHUNK.size + f[8]
        if f[1] == 5 and not done and b'kind\tinterval\n' in p:
            done = True
            head, _, rest = p.partition(b'\n\n')
            kv = dict(l.split(b'\t', 1) for l in head.split(b'\n'))
            rest = zlib.decompress(rest)
            rest = js + rest[int(kv[b'json_len']):]
            kv[b'json_len'] = str(len(js)).encode()
            z = zlib.compress(rest)
            kv[b'zlib_len'] = str(len(z)).encode()
            p = b''.join(k + b'\t' + v + b'\n' for k, v in kv.items()) + b'\n' + z
            f[8], f[9] = len(p), 0
            f[9] = crc32c(p, crc32c(CHUNK.pack(*f)))
        out += CHUNK.pack(*f) + p
    open(os.path.join(dst, name), 'wb').write(out)
PY
for h in notjson rowsnotarray badbucket countwraps manykeys; do
	echo keep >"$T_TMP/keep.html"
	"$KSIGHT" report "$T_TMP/h/$h" --html "$T_TMP/keep.html" >/dev/null 2>"$T_TMP/h.err"
	t_eq "hostile $h: report --html exits 2 in one line, OUT as it was" "2 1 keep" \
		"$? $(wc -l <"$T_TMP/h.err") $(cat "$T_TMP/keep.html")"
done

# diff --html: a second session with fewer sleeps, side by side; the gate on the count fires (exit 1) and is marked
"$KSIGHT" record --collect syscalls -i 1 -o "$T_TMP/b.ksr" -- "$WORKLOADS/hm_phases" 0.4 0.4 >"$T_TMP/wb.out" 2>/dev/null
SLEEPS_B=$(grep -c '^[sl] ' "$T_TMP/wb.out")
"$KSIGHT" diff "$F" "$T_TMP/b.ksr" --fail-on 'syscalls:syscall=clock_nanosleep.count<-10%' --html "$T_TMP/d.html" \
	>"$T_TMP/d.txt" 2>"$T_TMP/d.err"
t_eq "diff --html: exit 1 (the gate fired), the text on stdout as without --html" "1 1" \
	"$? $(grep -c '^FIRED ' "$T_TMP/d.txt")"
t_ok "diff --html: the same policy, no script or reference" sh -c "grep -q \"default-src 'none'\" '$T_TMP/d.html' && ! grep -Eiq '<script|src=\"|href=\"[^#]|url\\(' '$T_TMP/d.html'"
t_eq "diff --html: clock_nanosleep's table: count A $SLEEPS, B $SLEEPS_B" "$SLEEPS $SLEEPS_B" \
	"$(python3 -c 'import re, sys; t = open(sys.argv[1]).read().split("data-row=\"syscall=clock_nanosleep ")[1].split("</table>")[0]
print(*re.search(r"<td class=\"k\">count</td><td>(\d+)</td><td>(\d+)</td>", t).groups())' "$T_TMP/d.html")"
t_ok "diff --html: the fired gate marked" grep -q '<tr class="fired"><td class="k">FIRED</td><td class="k">syscalls:syscall=clock_nanosleep.count&lt;-10%: ' "$T_TMP/d.html"
t_eq "diff --html with --pair (events compared, no reports): bad usage (exit 2)" "2" \
	"$("$KSIGHT" diff "$T_TMP/h/notjson" "$F" --pair a:b/c:d --html "$T_TMP/x.html" >/dev/null 2>&1; echo $?)"

# the page's on-CPU flame graph runs no script (the CSP forbids it): none of the controls only script works is drawn
# in it (Reset zoom, Search, its box, the matched share); the standalone --svg keeps them
"$KSIGHT" record --collect syscalls -i 1 --profile -F 99 -o "$T_TMP/p.ksr" -- "$WORKLOADS/prof_qsort" 1 >/dev/null 2>&1
t_eq "record --profile -- prof_qsort 1: exit 0" "0" "$?"
"$KSIGHT" report "$T_TMP/p.ksr" --html "$T_TMP/p.html" >/dev/null 2>&1
t_eq "report --html of a profile: exit 0, its on-CPU flame graph in the page" "0 1" \
	"$? $(grep -c '<div class="flame oncpu"><svg ' "$T_TMP/p.html")"
t_eq "the page's flame graph: no Reset zoom, Search, search box or matched share" "0" \
	"$(grep -Ec 'Reset zoom|Search \(/\)|id="(reset|search|sbox|stext|matched)"' "$T_TMP/p.html")"
"$KSIGHT" report "$T_TMP/p.ksr" --svg "$T_TMP/p.svg" >/dev/null 2>&1
t_eq "report --svg: the standalone graph keeps Reset zoom and Search (/)" "0 2" \
	"$? $(grep -Ec '>Reset zoom<|>Search \(/\)<' "$T_TMP/p.svg")"

NODE_DIR=${KS_NODE_DIR:-/var/cache/ksight-node}
if ! command -v chromium >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1 || [ ! -d "$NODE_DIR/node_modules/playwright-core" ]; then
	t_skip "report --html in chromium" "needs chromium, node and playwright-core in $NODE_DIR (scripts/setup.sh)"
	exit $T_FAILED
fi
cat >"$T_TMP/check.js" <<'JS'
// Opens the page in headless Chromium (wide, then phone-sized): errors, requests and dialogs seen, the table's cells, each heatmap cell's pixel.
const { chromium } = require('playwright-core');
(async () => {
	const file = process.argv[2];
	const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu'] });
	const out = { errors: [], requests: [], dialogs: 0 };
	try {
		const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
		page.on('pageerror', (e) => out.errors.push(e.message));
		page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') out.errors.push(m.text()); });
		page.on('request', (r) => { if (r.url() !== 'file://' + file) out.requests.push(r.url()); });
		page.on('dialog', async (d) => { out.dialogs++; await d.dismiss(); });
		const t0 = Date.now();
		await page.goto('file://' + file, { waitUntil: 'load' });
		out.load_ms = Date.now() - t0;
		out.table = await page.evaluate(() => {
			const t = document.querySelector('table.pct[data-collector="syscalls"]');
			const head = Array.from(t.querySelectorAll('thead th')).map((th) => th.textContent);
			const row = Array.from(t.querySelectorAll('tbody tr')).map((tr) => Array.from(tr.children).map((td) => td.textContent))
				.find((r) => r[0] === 'clock_nanosleep');
			return row ? Object.fromEntries(head.map((h, i) => [h, row[i]])) : null;
		});
		out.text = await page.evaluate(() => document.body.innerText);
		// the clock_nanosleep panel's cells where the page lays them out, and the screenshot's pixel at each centre;
		// the whole page in the viewport, so that no plot is left undrawn for being off screen (content-visibility)
		await page.setViewportSize({ width: 1400, height: await page.evaluate(() => document.documentElement.scrollHeight) });
		const cells = await page.evaluate(() => {
			const g = Array.from(document.querySelectorAll('figure.hm')).find((p) => /^syscall=clock_nanosleep /.test(p.getAttribute('data-row')));
			return g ? Array.from(g.querySelectorAll('rect[data-lo]')).map((r) => {
				const b = r.getBoundingClientRect();
				const title = r.querySelector('title').textContent;
				return { lo: +r.getAttribute('data-lo'), n: +title.replace(/.*: /, ''), fill: r.getAttribute('fill'), title,
					x: b.left + window.scrollX + b.width / 2, y: b.top + window.scrollY + b.height / 2, w: b.width, h: b.height };
			}) : [];
		});
		const shot = await page.screenshot();
		const px = await browser.newPage();
		out.cells = await px.evaluate(async ([b64, cells]) => {
			const img = new Image();
			img.src = 'data:image/png;base64,' + b64;
			await img.decode();
			const cv = document.createElement('canvas');
			cv.width = img.width; cv.height = img.height;
			const cx = cv.getContext('2d');
			cx.drawImage(img, 0, 0);
			return cells.map((c) => {
				const d = cx.getImageData(Math.floor(c.x), Math.floor(c.y), 1, 1).data;
				return Object.assign(c, { px: [d[0], d[1], d[2]] });
			});
		}, [shot.toString('base64'), cells]);
		// a phone: the page itself never scrolls sideways (wide tables and plots scroll or shrink inside it)
		const phone = await browser.newPage({ viewport: { width: 390, height: 800 } });
		await phone.goto('file://' + file);
		out.phone_overflow = await phone.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
	} catch (e) {
		out.errors.push('check: ' + e.message);
	} finally {
		await browser.close();
	}
	console.log(JSON.stringify(out));
})();
JS
NODE_PATH=$NODE_DIR/node_modules timeout 120 node "$T_TMP/check.js" "$(cd "$T_TMP" && pwd)/s.html" >"$T_TMP/c.json" 2>"$T_TMP/c.err"
t_eq "chromium: no console error or warning" "[]" "$(jq -c .errors "$T_TMP/c.json" 2>&1 || cat "$T_TMP/c.err")"
t_eq "chromium: no request but the file itself" "[]" "$(jq -c .requests "$T_TMP/c.json")"
t_eq "chromium: no dialog (the hostile name and note did not run)" "0" "$(jq .dialogs "$T_TMP/c.json")"
t_eq "chromium: the syscalls table's clock_nanosleep row: n and count are the command's $SLEEPS" "$SLEEPS $SLEEPS" \
	"$(jq -r '.table | "\(.n) \(.count)"' "$T_TMP/c.json")"
t_ok "chromium: the hostile name shows as text" sh -c "jq -r .text '$T_TMP/c.json' | grep -Fq '$BAD'"
t_eq "chromium: on a phone the page does not scroll sideways" "0" "$(jq .phone_overflow "$T_TMP/c.json")"
t_in "chromium: opened in under 1 s (ms)" 0 1000 "$(jq .load_ms "$T_TMP/c.json")"
# the cells against the command's own sleeps: 1 ms ones in [2^19, 2^21) ns, 20 ms ones in [2^24, 2^25) ns; each
# drawn cell's centre pixel is its viridis colour (not the blank plot)
python3 - "$T_TMP/c.json" "$T_TMP/w.out" <<'PY' || t_fail "chromium: heatmap pixels" "a check above failed"
import json, sys
out, wl = json.load(open(sys.argv[1])), sys.argv[2]
cells = out['cells']
ms1 = sum(1 for l in open(wl) if l.startswith('s ') and (1 << 19) <= int(l.split()[1]) < (1 << 21))
ms20 = sum(1 for l in open(wl) if l.startswith('l ') and (1 << 24) <= int(l.split()[1]) < (1 << 25))
bad = []
def check(name, ok, why):
    print(('PASS: chromium heatmap: ' + name) if ok else 'FAIL: chromium heatmap: %s: %s' % (name, why))
    bad.append(not ok)
rgb = lambda h: [int(h[k:k + 2], 16) for k in (1, 3, 5)]
big = [c for c in cells if c['w'] >= 3 and c['h'] >= 3]
off = [c for c in big if any(abs(a - b) > 3 for a, b in zip(rgb(c['fill']), c['px']))]
check('%d of %d cells big enough to see, each pixel its fill' % (len(big), len(cells)), len(big) >= 4 and not off, off[:3])
check('coloured cells hold the %d sleeps of ~1 ms' % ms1,
      ms1 > 100 and sum(c['n'] for c in big if (1 << 19) <= c['lo'] < (1 << 21) and c['px'] != [255, 255, 255]) >= ms1, ms1)
check('coloured cells hold the %d sleeps of ~20 ms' % ms20,
      ms20 > 10 and sum(c['n'] for c in big if (1 << 24) <= c['lo'] < (1 << 25) and c['px'] != [255, 255, 255]) >= ms20, ms20)
check('hover titles: time, bucket, count', all(c['title'].endswith(': %d' % c['n']) and ' s, ' in c['title'] for c in cells),
      [c['title'] for c in cells][:2])
sys.exit(1 if any(bad) else 0)
PY
exit $T_FAILED
