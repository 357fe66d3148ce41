// Test helper: loads a trace-event JSON file with the DevTools performance engine (@paulirish/trace_engine) and prints what it saw as JSON.
import fs from 'node:fs';

const mods = process.env.KS_NODE_MODULES || '/opt/ksight-node/node_modules';
const Trace = await import(mods + '/@paulirish/trace_engine/models/trace/trace.js');
// the engine reads window.DOMRect, which Node lacks (its README says to provide one)
globalThis.DOMRect = class {
	constructor(x = 0, y = 0, w = 0, h = 0) { Object.assign(this, { x, y, width: w, height: h }); }
};

const file = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const model = Trace.TraceModel.Model.createWithAllHandlers();
await model.parse(file.traceEvents);
const data = model.parsedTrace().data;
const named = process.argv[3]; // optional: count the slices of this name, or of this tid (a number)
const byTid = /^[0-9]+$/.test(named || '');
const out = { generic: data.Meta.traceIsGeneric, bounds: data.Meta.traceBounds, threads: [], warnings: 0, named: 0, of: [] };
for (const [pid, proc] of data.Renderer.processes) {
	for (const [tid, t] of proc.threads) {
		const slices = t.entries.filter(e => e.ph === 'X');
		if (byTid && String(tid) === named) {
			out.named += slices.length;
			// the engine's own microseconds (ts, dur), as it will draw them
			out.of.push(...slices.map(e => [e.ts, e.dur]));
		} else if (!byTid) {
			out.named += slices.filter(e => e.name === named).length;
		}
		out.threads.push({
			pid, tid, name: t.name, slices: slices.length,
			roots: t.tree ? t.tree.roots.size : null,
			names: [...new Set(slices.map(e => e.name))].length,
			// the engine keeps microseconds as given: the sum of durations over the thread
			dur_us: slices.reduce((s, e) => s + e.dur, 0),
		});
	}
}
// the process_name metadata the engine kept, by pid
out.process_names = {};
for (const [pid, ev] of data.Meta.processNames) out.process_names[pid] = ev.args.name;
for (const list of data.Warnings.perWarning.values()) out.warnings += list.length;
console.log(JSON.stringify(out));
