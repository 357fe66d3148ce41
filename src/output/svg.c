/* The SVG writer: a self-contained flame graph, its labels in the file (an <img> shows them), interactive where script runs (click to zoom, type to search), coloured by kernel, user and JIT code. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "core/sanitize.h"
#include "output/output.h"
#include "output/stacks.h"
#include "output/svg.h"

#define SVG_W 1200
#define FRAME_H 16
#define PAD_TOP 40
#define PAD_BOTTOM 20

/*
 * The first @n bytes of @s quoted for XML. @s is a frame's text, already
 * sanitized once by ks_stacks_frame_text (valid UTF-8, no controls): sanitizing
 * it again would show a byte 0xff as \\xff and a backslash as four.
 */
void ks_svg_put(FILE *out, const char *s, size_t n)
{
	for (size_t i = 0; i < n && s[i]; i++) {
		const char *q = ks_quote_xml(s[i]);

		if (q)
			fputs(q, out);
		else
			fputc(s[i], out);
	}
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

/*
 * The script: click to zoom (labels fitted again to the new widths, by the
 * rule label() follows at write time), and search as you type: "/", Ctrl-F
 * or a click on Search opens a box on the graph that shows what is typed
 * (no prompt(), which a viewer may block and an <img> never runs).
 */
static const char script[] =
	"<script type=\"text/ecmascript\"><![CDATA[\n"
	"'use strict';\n"
	"var W = " "1200" ", frames = [], zoomed = null, query = null;\n"
	"function init() {\n"
	"  frames = Array.prototype.slice.call(document.querySelectorAll('g.f'));\n"
	"  frames.forEach(function (g) { g.addEventListener('click', function () { zoom(g); }); });\n"
	"  document.getElementById('reset').addEventListener('click', function () { zoom(null); });\n"
	"  document.getElementById('search').addEventListener('click', function () { typing(''); });\n"
	"  document.addEventListener('keydown', key);\n"
	"  layout(0, 1, -1);\n"
	"}\n"
	"/* the label of a frame pw pixels wide: as many characters as fit at 7 px, '..' when cut, none under 3 */\n"
	"function label(name, pw) {\n"
	"  var c = Array.from(name), n = Math.floor((pw - 6) / 7);\n"
	"  return n < 3 ? '' : c.length <= n ? name : c.slice(0, n - 2).join('') + '..';\n"
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
	"    t.textContent = label(g.getAttribute('data-n'), pw);\n"
	"  });\n"
	"}\n"
	"function zoom(g) {\n"
	"  zoomed = g;\n"
	"  if (!g) { layout(0, 1, -1); return; }\n"
	"  layout(+g.getAttribute('data-x'), +g.getAttribute('data-w'), +g.getAttribute('data-d'));\n"
	"}\n"
	"/* the search box: q the text typed so far, null to close it */\n"
	"function typing(q) {\n"
	"  query = q;\n"
	"  document.getElementById('sbox').style.display = q === null ? 'none' : '';\n"
	"  if (q !== null) document.getElementById('stext').textContent = 'Search: ' + q + '_';\n"
	"}\n"
	"function key(e) {\n"
	"  if (query === null) {\n"
	"    if (e.key === '/' || ((e.ctrlKey || e.metaKey) && e.key === 'f')) { e.preventDefault(); typing(''); }\n"
	"    else if (e.key === 'Escape') search('');\n"
	"    return;\n"
	"  }\n"
	"  if (e.ctrlKey || e.metaKey || e.altKey) return;\n"
	"  e.preventDefault();\n"
	"  if (e.key === 'Escape') { typing(null); search(''); return; }\n"
	"  if (e.key === 'Enter') { typing(null); return; }\n"
	"  if (e.key === 'Backspace') typing(query.slice(0, -1));\n"
	"  else if (e.key.length === 1) typing(query + e.key);\n"
	"  search(query);\n"
	"}\n"
	"/* highlights the frames whose name matches the regular expression re ('': none) */\n"
	"function search(re) {\n"
	"  var total = 0, spans = [], rx = null;\n"
	"  try { rx = re ? new RegExp(re) : null; } catch (err) { rx = null; }\n"
	"  frames.forEach(function (g) {\n"
	"    var r = g.querySelector('rect');\n"
	"    if (!r.getAttribute('data-fill')) r.setAttribute('data-fill', r.getAttribute('fill'));\n"
	"    var hit = rx && rx.test(g.getAttribute('data-n'));\n"
	"    r.setAttribute('fill', hit ? 'rgb(230,0,230)' : r.getAttribute('data-fill'));\n"
	"    if (hit) spans.push([+g.getAttribute('data-x'), +g.getAttribute('data-w')]);\n"
	"  });\n"
	"  /* matched share: nested matches counted once */\n"
	"  spans.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });\n"
	"  var end = -1;\n"
	"  spans.forEach(function (s) { if (s[0] >= end) { total += s[1]; end = s[0] + s[1]; } });\n"
	"  var svg = document.documentElement, n = Math.round(total * +svg.getAttribute('data-total'));\n"
	"  document.getElementById('matched').textContent = rx ? 'Matched: ' + (total * 100).toFixed(2) + '% (' + n + ' ' +\n"
	"    svg.getAttribute('data-unit') + ')' : re ? 'Not a regular expression' : '';\n"
	"}\n"
	"window.addEventListener('load', init);\n"
	"]]></script>\n";

/* What the values count, as the graph says it: a profile's samples, else its unit (offcpu: nanoseconds). */
static const char *unit_word(const struct ks_stacks *st)
{
	return !strcmp(st->unit, "count") ? "samples" : st->unit;
}

/* Bytes of the character at @s of sanitized text (valid UTF-8): ks_utf8_len's multi-byte sequences, else one. */
static size_t char_len(const char *s)
{
	int n = ks_utf8_len((const unsigned char *)s);

	return n > 0 ? (size_t)n : 1;
}

/*
 * The label of a frame @pw pixels wide, written into the file so that a
 * viewer without script (an <img>, rsvg-convert) shows it: the script's
 * label() rule on the same text (data-n's, the sanitized @name), counted in
 * characters, cut with "..", none under 3.  Cut at a character, never inside
 * one: diff's graph cut at a byte and showed "\xe5" for the rest of a CJK one.
 */
void ks_svg_label(FILE *out, const char *name, double pw)
{
	long fit = (long)((pw - 6) / 7), n = 0, k;
	size_t len = strlen(name), cut = 0;

	if (fit < 3)
		return;
	for (size_t i = 0; i < len; n++)
		i += char_len(name + i);
	k = n <= fit ? n : fit - 2;
	for (; k > 0; k--)
		cut += char_len(name + cut);
	ks_svg_put(out, name, cut);
	if (n > fit)
		fputs("..", out);
}

/* Writes the frame @id at @depth covering [start, start + w) of the total. */
static void frame(const struct ks_stacks *st, FILE *out, uint32_t id, uint32_t depth, uint32_t maxdepth,
		  uint64_t start, uint64_t w)
{
	double fx = (double)start / st->total, fw = (double)w / st->total;
	char name[512], fill[32];

	ks_stacks_frame_text(st, id, name, sizeof(name));
	colour(st->names[id], st->kinds[id], fill, sizeof(fill));
	fprintf(out, "<g class=\"f\" data-x=\"%.9f\" data-w=\"%.9f\" data-d=\"%u\" data-n=\"", fx, fw, depth);
	ks_svg_put(out, name, sizeof(name));
	fprintf(out, "\"><title>");
	ks_svg_put(out, name, sizeof(name));
	fprintf(out, " (%llu %s, %.2f%%)</title><rect x=\"%.2f\" y=\"%u\" width=\"%.2f\" height=\"%u\" fill=\"%s\" rx=\"2\"/>"
		     "<text x=\"%.2f\" y=\"%u\">",
		(unsigned long long)w, unit_word(st), fw * 100, fx * SVG_W, PAD_TOP + (maxdepth - depth) * FRAME_H,
		fw * SVG_W, FRAME_H - 1, fill, fx * SVG_W + 3, PAD_TOP + (maxdepth - depth) * FRAME_H + 11);
	ks_svg_label(out, name, fw * SVG_W);
	fputs("</text></g>\n", out);
}

int ks_write_svg(const struct ks_stacks *st, FILE *out)
{
	return ks_write_svg_opt(st, out, &(struct ks_svg_opts){ 0 });
}

/*
 * The note under a graph drawn with a minimum width: how many frames are left
 * out and the share of the total under the outermost of them (drawn only as
 * their callers' width), so a reader knows what the gaps hold.
 */
static void narrow_note(const struct ks_stacks *st, FILE *out, const struct ks_svg_opts *o, uint64_t nleft,
			uint64_t hidden)
{
	if (!nleft)
		return;
	/* under the title, left of where the search box opens: the bottom line is the "all" bar's */
	fprintf(out, "<text id=\"narrow\" x=\"10\" y=\"35\">%llu frames narrower than %g px left out "
		     "(%llu %s, %.2f%%, drawn as their callers' width)</text>\n",
		(unsigned long long)nleft, o->min_px, (unsigned long long)hidden, unit_word(st),
		100.0 * (double)hidden / (double)st->total);
}

int ks_write_svg_opt(const struct ks_stacks *st, FILE *out, const struct ks_svg_opts *o)
{
	uint32_t maxdepth = 0, *path = NULL, plen = 0;
	uint64_t *pstart = NULL, *narrow = NULL, x = 0, min_w = 0, nleft = 0, hidden = 0;
	int err = 0;

	for (size_t i = 0; i < st->n; i++)
		if (st->s[i].n > maxdepth)
			maxdepth = st->s[i].n;
	fprintf(out, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		     "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%u\" "
		     "viewBox=\"0 0 %d %u\" font-family=\"Verdana, sans-serif\" font-size=\"11\" "
		     "data-total=\"%llu\" data-unit=\"%s\">\n",
		SVG_W, PAD_TOP + (maxdepth + 1) * FRAME_H + PAD_BOTTOM, SVG_W, PAD_TOP + (maxdepth + 1) * FRAME_H + PAD_BOTTOM,
		(unsigned long long)st->total, unit_word(st));
	if (!o->no_script)
		fputs(script, out);
	fprintf(out, "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"rgb(248,248,240)\"/>\n"
		     "<text x=\"%d\" y=\"20\" text-anchor=\"middle\" font-size=\"16\">Flame graph (%llu %s)</text>\n",
		SVG_W / 2, (unsigned long long)st->total, unit_word(st));
	if (!o->no_script)
		fprintf(out, "<text id=\"reset\" x=\"10\" y=\"20\" style=\"cursor:pointer\">Reset zoom</text>\n"
			     "<text id=\"search\" x=\"%d\" y=\"20\" text-anchor=\"end\" style=\"cursor:pointer\">Search (/)</text>\n"
			     "<g id=\"sbox\" style=\"display:none\"><rect x=\"%d\" y=\"26\" width=\"300\" height=\"14\" "
			     "fill=\"rgb(255,255,255)\" stroke=\"rgb(120,120,120)\"/><text id=\"stext\" x=\"%d\" y=\"37\"></text></g>\n"
			     "<text id=\"matched\" x=\"%d\" y=\"%u\" text-anchor=\"end\"></text>\n",
			SVG_W - 10, SVG_W - 310, SVG_W - 306, SVG_W - 10, PAD_TOP + (maxdepth + 1) * FRAME_H + 12);
	if (!st->total)
		goto end;
	path = calloc(maxdepth + 1, sizeof(*path));
	pstart = calloc(maxdepth + 1, sizeof(*pstart));
	narrow = calloc(maxdepth + 2, sizeof(*narrow)); /* by depth: the width of a frame's children left out */
	if (!path || !pstart || !narrow) {
		err = -ENOMEM;
		goto end;
	}
	/* the smallest width drawn, in the total's units: a frame of w is w / total * SVG_W pixels */
	if (o->min_px > 0)
		min_w = (uint64_t)(o->min_px * (double)st->total / SVG_W + 0.999999);
	/* the stacks are sorted: a frame spans the run of stacks that share the path to it */
	for (size_t i = 0; i <= st->n; i++) {
		const struct ks_stack *s = i < st->n ? &st->s[i] : NULL;
		uint32_t c = 0;

		while (s && c < plen && c < s->n && path[c] == s->frames[c])
			c++;
		while (plen > c) {
			uint64_t w;

			plen--;
			w = x - pstart[plen];
			/* a child is never wider than its caller: a frame left out has all its callees left out */
			if (w < min_w) {
				nleft++;
				narrow[plen] += w;
			} else {
				hidden += narrow[plen + 1];
				frame(st, out, path[plen], plen, maxdepth, pstart[plen], w);
			}
			narrow[plen + 1] = 0;
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
		(unsigned long long)st->total, unit_word(st), PAD_TOP + (maxdepth + 0) * FRAME_H + FRAME_H, SVG_W,
		FRAME_H - 1, PAD_TOP + (maxdepth + 1) * FRAME_H + 11);
	narrow_note(st, out, o, nleft, hidden + narrow[0]);
end:
	fputs("</svg>\n", out);
	free(path);
	free(pstart);
	free(narrow);
	return err ? err : ks_stream_status(out);
}
