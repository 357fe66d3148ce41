// Decodes a gzip'd pprof file with the pprof-format npm package (a profile.proto reader of its own) and prints what it holds: "mapping START LIMIT OFFSET FILE BUILD_ID", "period TYPE/UNIT N", "time NANOS", "duration NANOS", "samples N", "label KEY" per label key seen, "location ADDR MAPPING FUNC:FILE:LINE,..." per location.
const fs = require('fs');
const zlib = require('zlib');
const { Profile } = require('pprof-format');

const p = Profile.decode(zlib.gunzipSync(fs.readFileSync(process.argv[2])));
const s = (i) => p.stringTable.strings[Number(i)];
const hex = (v) => '0x' + BigInt(v).toString(16);
for (const m of p.mapping)
	console.log(['mapping', hex(m.memoryStart), hex(m.memoryLimit), hex(m.fileOffset), s(m.filename), s(m.buildId) || '-'].join(' '));
if (p.periodType) console.log('period ' + s(p.periodType.type) + '/' + s(p.periodType.unit) + ' ' + p.period);
console.log('time ' + p.timeNanos);
console.log('duration ' + p.durationNanos);
console.log('samples ' + p.sample.length);
const keys = new Set();
for (const sm of p.sample) for (const l of sm.label) keys.add(s(l.key));
for (const k of keys) console.log('label ' + k);
const fn = new Map(p.function.map((f) => [String(f.id), f]));
for (const l of p.location)
	console.log('location ' + hex(l.address) + ' ' + l.mappingId + ' ' +
		l.line.map((x) => { const f = fn.get(String(x.functionId)); return s(f.name) + ':' + s(f.filename) + ':' + x.line; }).join(','));
