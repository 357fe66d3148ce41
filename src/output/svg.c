/* The SVG writer: a self-contained interactive flame graph (click to zoom, search), coloured by kernel, user and JIT code. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "core/sanitize.h"
#include "output/output.h"
#include "output/stacks.h"

#define SVG_W 1200
#define FRAME_H 16
#define PAD_TOP 40
#define PAD_BOTTOM 20

/* XML 1.0 allows no control characters and only UTF-8 here: sanitized, then quoted. */
static void xml_text(FILE *out, const char *s)
{
	ks_sanitize_put(out, s, ks_quote_xml);
}

/* A colour per kind, varied by the name's hash so neighbours differ: user warm, kernel blue, JIT green. */
static void colour(const char *name, int kind, char *buf, size_t len)
{
	unsigned h = 5381;
	int v;

	for (const char *c = name; *c; c++)
		h = h * 33 + (unsigned char)*c;
	v = h % 55;
	switch (kind) {
	case KS_FK_KERNEL:
		snprintf(buf, len, "rgb(%d,%d,230)", 80 + v, 150 + v);
		break;
	case KS_FK_JIT:
		snprintf(buf, len, "rgb(%d,200,%d)", 60 + v, 60 + v);
		break;
	case KS_FK_INLINE: /* flamegraph.pl's aqua for inlined frames */
		snprintf(buf, len, "rgb(%d,%d,%d)", 60 + v, 200 + v / 2, 200 + v / 2);
		break;
	case KS_FK_COMM:
		snprintf(buf, len, "rgb(%d,%d,%d)", 170 + v, 170 + v, 170 + v);
		break;
	default:
		snprintf(buf, len, "rgb(230,%d,%d)", 100 + v * 2, 40 + v);
	}
}

static const char script[] =
	"<script type=\"text/ecmascript\"><![CDATA[\n"
	"'use strict';\n"
	"var W = " "1200" ", frames = [], zoomed = null;\n"
	"function init() {\n"
	"  frames = Array.prototype.slice.call(document.querySelectorAll('g.f'));\n"
	"  frames.forEach(function (g) { g.addEventListener('click', function () { zoom(g); }); });\n"
	"  document.getElementById('reset').addEventListener('click', function () { zoom(null); });\n"
	"  document.getElementById('search').addEventListener('click', search);\n"
	"  layout(0, 1, -1);\n"
	"}\n"
	"/* places every frame for the window [x0, x0+w) of the total, hiding frames outside it */\n"
	"function layout(x0, w, mindepth) {\n"
	"  frames.forEach(function (g) {\n"
	"    var x = +g.getAttribute('data-x'), fw = +g.getAttribute('data-w'), d = +g.getAttribute('data-d');\n"
	"    var r = g.querySelector('rect'), t = g.querySelector('text');\n"
	"    var inside = x >= x0 - 1e-12 && x + fw <= x0 + w + 1e-12;\n"
	"    var px = (x - x0) / w * W, pw = fw / w * W;\n"
	"    if (!inside && !(d < mindepth && x <= x0 && x + fw >= x0 + w)) { g.style.display = 'none'; return; }\n"
	"    if (!inside) { px = 0; pw = W; g.style.opacity = 0.5; } else g.style.opacity = 1;\n"
	"    g.style.display = pw < 0.1 ? 'none' : '';\n"
	"    r.setAttribute('x', px); r.setAttribute('width', Math.max(pw - 0.5, 0.1));\n"
	"    t.setAttribute('x', px + 3);\n"
	"    var name = g.getAttribute('data-n'), n = Math.floor((pw - 6) / 7);\n"
	"    t.textContent = n < 3 ? '' : (name.length <= n ? name : name.substring(0, n - 2) + '..');\n"
	"  });\n"
	"}\n"
	"function zoom(g) {\n"
	"  zoomed = g;\n"
	"  if (!g) { layout(0, 1, -1); return; }\n"
	"  layout(+g.getAttribute('data-x'), +g.getAttribute('data-w'), +g.getAttribute('data-d'));\n"
	"}\n"
	"function search() {\n"
	"  var re = prompt('Search (regular expression):', '');\n"
	"  var total = 0, spans = [];\n"
	"  frames.forEach(function (g) {\n"
	"    var r = g.querySelector('rect');\n"
	"    if (!r.getAttribute('data-fill')) r.setAttribute('data-fill', r.getAttribute('fill'));\n"
	"    var hit = re && new RegExp(re).test(g.getAttribute('data-n'));\n"
	"    r.setAttribute('fill', hit ? 'rgb(230,0,230)' : r.getAttribute('data-fill'));\n"
	"    if (hit) spans.push([+g.getAttribute('data-x'), +g.getAttribute('data-w')]);\n"
	"  });\n"
	"  /* matched share: nested matches counted once */\n"
	"  spans.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });\n"
	"  var end = -1;\n"
	"  spans.forEach(function (s) { if (s[0] >= end) { total += s[1]; end = s[0] + s[1]; } });\n"
	"  document.getElementById('matched').textContent = re ? 'Matched: ' + (total * 100).toFixed(2) + '%' : '';\n"
	"}\n"
	"window.addEventListener('load', init);\n"
	"]]></script>\n";

/* Writes the frame @id at @depth covering [start, start + w) of the total. */
static void frame(const struct ks_stacks *st, FILE *out, uint32_t id, uint32_t depth, uint32_t maxdepth,
		  uint64_t start, uint64_t w)
{
	double fx = (double)start / st->total, fw = (double)w / st->total;
	char name[512], fill[32];

	ks_stacks_frame_text(st, id, name, sizeof(name));
	colour(st->names[id], st->kinds[id], fill, sizeof(fill));
	fprintf(out, "<g class=\"f\" data-x=\"%.9f\" data-w=\"%.9f\" data-d=\"%u\" data-n=\"", fx, fw, depth);
	xml_text(out, name);
	fprintf(out, "\"><title>");
	xml_text(out, name);
	fprintf(out, " (%llu %s, %.2f%%)</title><rect x=\"%.2f\" y=\"%u\" width=\"%.2f\" height=\"%u\" fill=\"%s\" rx=\"2\"/>"
		     "<text x=\"%.2f\" y=\"%u\"></text></g>\n",
		(unsigned long long)w, st->unit, fw * 100, fx * SVG_W, PAD_TOP + (maxdepth - depth) * FRAME_H,
		fw * SVG_W, FRAME_H - 1, fill, fx * SVG_W + 3, PAD_TOP + (maxdepth - depth) * FRAME_H + 11);
}

int ks_write_svg(const struct ks_stacks *st, FILE *out)
{
	uint32_t maxdepth = 0, *path = NULL, plen = 0;
	uint64_t *pstart = NULL, x = 0;
	int err = 0;

	for (size_t i = 0; i < st->n; i++)
		if (st->s[i].n > maxdepth)
			maxdepth = st->s[i].n;
	fprintf(out, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		     "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%u\" "
		     "viewBox=\"0 0 %d %u\" font-family=\"Verdana, sans-serif\" font-size=\"11\">\n",
		SVG_W, PAD_TOP + (maxdepth + 1) * FRAME_H + PAD_BOTTOM, SVG_W, PAD_TOP + (maxdepth + 1) * FRAME_H + PAD_BOTTOM);
	fputs(script, out);
	fprintf(out, "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"rgb(248,248,240)\"/>\n"
		     "<text x=\"%d\" y=\"20\" text-anchor=\"middle\" font-size=\"16\">Flame graph (%llu %s)</text>\n"
		     "<text id=\"reset\" x=\"10\" y=\"20\" style=\"cursor:pointer\">Reset zoom</text>\n"
		     "<text id=\"search\" x=\"%d\" y=\"20\" text-anchor=\"end\" style=\"cursor:pointer\">Search</text>\n"
		     "<text id=\"matched\" x=\"%d\" y=\"%u\" text-anchor=\"end\"></text>\n",
		SVG_W / 2, (unsigned long long)st->total, st->unit, SVG_W - 10, SVG_W - 10,
		PAD_TOP + (maxdepth + 1) * FRAME_H + 12);
	if (!st->total)
		goto end;
	path = calloc(maxdepth + 1, sizeof(*path));
	pstart = calloc(maxdepth + 1, sizeof(*pstart));
	if (!path || !pstart) {
		err = -ENOMEM;
		goto end;
	}
	/* the stacks are sorted: a frame spans the run of stacks that share the path to it */
	for (size_t i = 0; i <= st->n; i++) {
		const struct ks_stack *s = i < st->n ? &st->s[i] : NULL;
		uint32_t c = 0;

		while (s && c < plen && c < s->n && path[c] == s->frames[c])
			c++;
		while (plen > c) {
			plen--;
			frame(st, out, path[plen], plen, maxdepth, pstart[plen], x - pstart[plen]);
		}
		if (!s)
			break;
		for (; plen < s->n; plen++) {
			path[plen] = s->frames[plen];
			pstart[plen] = x;
		}
		x += s->value;
	}
	/* the root: all samples */
	fprintf(out, "<g><title>all (%llu %s)</title><rect x=\"0\" y=\"%u\" width=\"%d\" height=\"%d\" fill=\"rgb(200,200,200)\"/>"
		     "<text x=\"3\" y=\"%u\">all</text></g>\n",
		(unsigned long long)st->total, st->unit, PAD_TOP + (maxdepth + 0) * FRAME_H + FRAME_H, SVG_W,
		FRAME_H - 1, PAD_TOP + (maxdepth + 1) * FRAME_H + 11);
end:
	fputs("</svg>\n", out);
	free(path);
	free(pstart);
	return err ? err : ks_stream_status(out);
}
