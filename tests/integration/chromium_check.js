// Headless Chromium checks of SVG outputs (playwright-core): "speedscope INDEX FILE" imports FILE into speedscope's static build, exports it and prints the frames it parsed; "svg FILE PNG" opens a flame graph, prints its frame names and takes a screenshot; "svgsearch FILE QUERY" searches it by keyboard; "heatmap FILE PNG" compares a heatmap's screenshot, pixel by pixel, with its cells.
const fs = require('fs');
const { chromium } = require('playwright-core');

async function speedscope(browser, index, file) {
	const page = await browser.newPage({ acceptDownloads: true });
	let alerted = null;
	page.on('console', (m) => {
		if (/^Importing as/.test(m.text())) console.log('format ' + m.text().replace(/^Importing as /, ''));
	});
	// speedscope reports a file it cannot read with alert(), which would hang a page left alone
	page.on('dialog', async (d) => { alerted = d.message(); await d.dismiss(); });
	await page.goto('file://' + index);
	await page.setInputFiles('input[type=file]', file);
	const exp = page.getByText('Export');
	try {
		await exp.waitFor({ timeout: 20000 });
	} catch (e) {
		throw new Error(alerted ? 'alert: ' + alerted : 'no profile view: ' + e.message.split('\n')[0]);
	}
	// what speedscope parsed, from its own export: a view that "loads" may still be empty
	const [dl] = await Promise.all([page.waitForEvent('download'), exp.click()]);
	const doc = JSON.parse(fs.readFileSync(await dl.path(), 'utf8'));
	const profiles = doc.profiles || [];
	// a sampled profile's weights, or an evented one's span (collapsed stacks are exported evented)
	const weight = profiles.reduce((n, p) => n + (p.type === 'evented' ? p.endValue - p.startValue : (p.weights || []).reduce((a, b) => a + b, 0)), 0);
	console.log('profiles ' + profiles.length + ' weight ' + weight);
	for (const f of (doc.shared && doc.shared.frames) || []) console.log('frame ' + f.name);
}

async function svg(browser, file, png) {
	const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
	const errors = [];
	page.on('pageerror', (e) => errors.push(e.message));
	await page.goto('file://' + file);
	await page.waitForTimeout(500);
	const names = await page.evaluate(() => Array.from(document.querySelectorAll('title')).map((t) => t.textContent));
	console.log('titles ' + names.length + ' errors ' + errors.length);
	for (const n of names) console.log('title ' + n);
	await page.screenshot({ path: png });
}

// Every drawn cell's centre pixel must be its fill colour; every pixel of a plot down each
// column's middle must be either blank (the plot's white) or inside a drawn cell of that column.
async function heatmap(browser, file, png) {
	// the whole document in the viewport (a full-page screenshot of a bare SVG document never ends)
	const height = +(/<svg[^>]* height="([0-9.]+)"/.exec(fs.readFileSync(file, 'utf8')) || [0, 800])[1];
	const page = await browser.newPage({ viewport: { width: 1000, height: Math.ceil(height) } });
	const errors = [];
	page.on('pageerror', (e) => errors.push(e.message));
	page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
	await page.goto('file://' + file);
	const shot = await page.screenshot({ path: png });
	// the screenshot's pixels, read back through a canvas in a blank page
	const px = await browser.newPage();
	const res = await px.evaluate(async ([b64, svgText]) => {
		const img = new Image();
		img.src = 'data:image/png;base64,' + b64;
		await img.decode();
		const cv = document.createElement('canvas');
		cv.width = img.width; cv.height = img.height;
		const cx = cv.getContext('2d');
		cx.drawImage(img, 0, 0);
		const data = cx.getImageData(0, 0, img.width, img.height).data;
		const at = (x, y) => { const i = (Math.floor(y) * img.width + Math.floor(x)) * 4; return [data[i], data[i + 1], data[i + 2]]; };
		const hex = (s) => [1, 3, 5].map((k) => parseInt(s.substr(k, 2), 16));
		const near = (a, b) => a.every((v, k) => Math.abs(v - b[k]) <= 3);
		const doc = new DOMParser().parseFromString(svgText, 'image/svg+xml');
		const out = { cells: 0, matched: 0, bad: [], stray: 0, coloured: 0, blank: 0 };
		for (const g of doc.querySelectorAll('g.panel')) {
			const plot = g.querySelector('rect.plot');
			const py = +plot.getAttribute('y'), ph = +plot.getAttribute('height');
			const cells = Array.from(g.querySelectorAll('rect.c')).map((r) => ({
				x: +r.getAttribute('x'), y: +r.getAttribute('y'), w: +r.getAttribute('width'),
				h: +r.getAttribute('height'), fill: hex(r.getAttribute('fill')),
			}));
			for (const c of cells) {
				out.cells++;
				const got = at(c.x + c.w / 2, c.y + c.h / 2);
				if (near(got, c.fill)) out.matched++;
				else if (out.bad.length < 5) out.bad.push(JSON.stringify([c, got]));
			}
			// down the middle of each column, pixel row by pixel row (row r covers [r, r + 1))
			const cols = Array.from(new Set(cells.map((c) => c.x + '/' + c.w)));
			for (const k of cols) {
				const [x, w] = k.split('/').map(Number), xm = x + w / 2;
				// a column under 3 px (a last, partial interval cut short by -d) is blended with its neighbours by antialiasing
				if (w < 3) continue;
				for (let r = Math.ceil(py) + 1; r + 1 < py + ph - 1; r++) {
					const p = at(xm, r);
					const inside = cells.find((c) => c.x === x && r >= c.y && r + 1 <= c.y + c.h);
					if (inside) { if (near(p, inside.fill)) out.coloured++; else out.stray++; }
					else if (cells.some((c) => c.x === x && r < c.y + c.h && r + 1 > c.y)) continue; // a cell's edge: blended
					else if (near(p, [255, 255, 255])) out.blank++;
					else { out.stray++; if (out.bad.length < 8) out.bad.push('stray ' + xm + ',' + r + ' ' + p); }
				}
			}
		}
		return out;
	}, [shot.toString('base64'), fs.readFileSync(file, 'utf8')]);
	console.log('errors ' + errors.length + ' cells ' + res.cells + ' matched ' + res.matched + ' coloured ' + res.coloured +
		' blank ' + res.blank + ' stray ' + res.stray);
	for (const e of errors) console.log('error ' + e);
	for (const b of res.bad) console.log('bad ' + b);
}

// types "/" then QUERY on the flame graph (keyboard search, no prompt()): frames highlighted, dialogs seen, the matched text
async function svgsearch(browser, file, query) {
	const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
	let dialogs = 0;
	page.on('dialog', async (d) => { dialogs++; await d.dismiss(); });
	await page.goto('file://' + file);
	await page.waitForFunction(() => document.querySelectorAll('g.f').length > 0);
	await page.keyboard.press('/');
	await page.keyboard.type(query);
	await page.keyboard.press('Enter');
	const hits = await page.evaluate(() => Array.from(document.querySelectorAll('g.f rect')).filter((r) => r.getAttribute('fill') === 'rgb(230,0,230)').length);
	console.log('highlighted ' + hits);
	console.log('dialogs ' + dialogs);
	console.log('text ' + await page.evaluate(() => document.getElementById('matched').textContent));
	// zoom still works: a click on the narrowest visible frame widens it to the whole graph, its label refitted
	const z = await page.evaluate(() => {
		const gs = Array.from(document.querySelectorAll('g.f')).filter((g) => +g.querySelector('rect').getAttribute('width') > 1);
		gs.sort((a, b) => +a.getAttribute('data-w') - +b.getAttribute('data-w'));
		const g = gs[0];
		g.dispatchEvent(new MouseEvent('click'));
		return [g.querySelector('rect').getAttribute('width'), g.querySelector('text').textContent, g.getAttribute('data-n')];
	});
	console.log('zoomed ' + Math.round(+z[0]) + ' ' + (z[1] === z[2] ? 'label' : 'nolabel'));
}

(async () => {
	const [mode, a, b] = process.argv.slice(2);
	const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu'] });
	try {
		if (mode === 'speedscope') await speedscope(browser, a, b);
		else if (mode === 'svg') await svg(browser, a, b);
		else if (mode === 'heatmap') await heatmap(browser, a, b);
		else if (mode === 'svgsearch') await svgsearch(browser, a, b);
		else throw new Error('usage: chromium_check.js speedscope INDEX FILE | svg FILE PNG | svgsearch FILE QUERY | heatmap FILE PNG');
	} catch (e) {
		console.error('chromium_check: ' + e.message);
		process.exitCode = 1;
	} finally {
		await browser.close();
	}
})();
