// Headless Chromium checks of profile outputs (playwright-core): "speedscope INDEX FILE" imports FILE into speedscope's static build, exports it and prints the frames it parsed; "svg FILE PNG" opens a flame graph, prints its frame names and takes a screenshot; "svgsearch FILE QUERY" searches it by keyboard.
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
		else if (mode === 'svgsearch') await svgsearch(browser, a, b);
		else throw new Error('usage: chromium_check.js speedscope INDEX FILE | svg FILE PNG | svgsearch FILE QUERY');
	} catch (e) {
		console.error('chromium_check: ' + e.message);
		process.exitCode = 1;
	} finally {
		await browser.close();
	}
})();
