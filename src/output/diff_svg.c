/* The differential flame graph: B's stacks laid out as a flame graph, each frame red where B grew against A, blue where it shrank. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/sanitize.h"
#include "output/diff.h"
#include "output/output.h"
#include "output/svg.h"

#define SVG_W 1200
#define FRAME_H 16
#define PAD 10
#define PAD_TOP 44
#define MAX_DEPTH 512

/*
 * A frame is a run of sorted stacks sharing one prefix: its width is their B
 * count, its A count the same stacks' A counts.  A is scaled to B's total
 * (as difffolded's -n), so a frame's change is its share of the profile:
 * delta = B - A * (totalB / totalA).
 */
struct open_frame {
	const char *name;
	size_t len;
	uint64_t x;	/* B samples left of it */
	uint64_t b;	/* B samples in it */
	double a;	/* scaled A samples in it */
};

struct svg_ctx {
	FILE *out;
	uint64_t total_b;
	double scale, max_delta;
	int depth_max;
	int pass; /* 0: measure the largest change, 1: draw */
};

/*
 * The first @len bytes of @s (a frame of a folded line, or the title)
 * sanitized into @buf (at most @size - 1 bytes), whole characters only: a
 * piece never spans the ';' that ends a frame (no UTF-8 sequence holds an
 * ASCII byte), and one that does not fit is left out, not cut.
 */
static const char *text_of(const char *s, size_t len, char *buf, size_t size)
{
	char piece[KS_SAN_PIECE];
	size_t o = 0, i = 0, used, n;

	while (i < len && (used = ks_sanitize_next(s + i, piece)) && o + (n = strlen(piece)) < size) {
		memcpy(buf + o, piece, n);
		o += n;
		i += used;
	}
	buf[o] = 0;
	return buf;
}

static void xml(FILE *out, const char *s, size_t len)
{
	char buf[512];

	ks_svg_put(out, text_of(s, len, buf, sizeof(buf)), sizeof(buf));
}

static void close_frame(struct svg_ctx *c, const struct open_frame *f, int depth)
{
	double delta = (double)f->b - f->a, w, x, t;
	int r = 220, g = 220, bl = 220;
	const char *cls = "same";

	if (c->pass == 0) {
		if (fabs(delta) > c->max_delta)
			c->max_delta = fabs(delta);
		if (depth > c->depth_max)
			c->depth_max = depth;
		return;
	}
	w = (double)f->b / (double)c->total_b * (SVG_W - 2 * PAD);
	if (w < 0.1)
		return;
	x = PAD + (double)f->x / (double)c->total_b * (SVG_W - 2 * PAD);
	t = c->max_delta > 0 ? fabs(delta) / c->max_delta : 0;
	/* a change under 1% of the largest one is drawn as none */
	if (t >= 0.01 && delta > 0) {
		cls = "grew";
		r = 255;
		g = bl = (int)lround(225 - 185 * t);
	} else if (t >= 0.01) {
		cls = "shrank";
		bl = 255;
		r = g = (int)lround(225 - 185 * t);
	}
	fprintf(c->out, "<g class=\"%s\"><title>", cls);
	xml(c->out, f->name, f->len);
	fprintf(c->out, " (B %llu, A %.0f scaled, %+.0f, %+.2f%% of B)</title>", (unsigned long long)f->b, f->a, delta,
		delta / (double)c->total_b * 100);
	fprintf(c->out, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"rgb(%d,%d,%d)\" rx=\"2\"/>", x,
		PAD_TOP + (c->depth_max - depth) * FRAME_H, w, FRAME_H - 1, r, g, bl);
	if (w > 30) {
		char name[512];

		fprintf(c->out, "<text x=\"%.1f\" y=\"%d\">", x + 3, PAD_TOP + (c->depth_max - depth) * FRAME_H + 12);
		ks_svg_label(c->out, text_of(f->name, f->len, name, sizeof(name)), w);
		fputs("</text>", c->out);
	}
	fputs("</g>\n", c->out);
}

/* One pass over the sorted stacks, flamegraph-style: frames open while their prefix lasts. */
static int walk(struct svg_ctx *c, const struct ks_folded2 *f)
{
	struct open_frame *st = calloc(MAX_DEPTH, sizeof(*st));
	uint64_t x = 0;
	int n = 0;

	if (!st)
		return -ENOMEM;
	for (size_t i = 0; i <= f->n; i++) {
		const struct ks_fstack *s = i < f->n ? &f->v[i] : NULL;
		const char *p = s ? s->stack : "";
		int d = 0;

		if (s && !s->n[1])
			continue; /* widths are B's: a stack only A has is not drawn */
		/* how many open frames this stack shares */
		while (s && d < n && !strncmp(p, st[d].name, st[d].len) && (p[st[d].len] == ';' || !p[st[d].len])) {
			p += st[d].len + (p[st[d].len] == ';');
			d++;
		}
		while (n > d) {
			n--;
			close_frame(c, &st[n], n);
		}
		if (!s)
			break;
		while (*p && n < MAX_DEPTH) {
			size_t len = strcspn(p, ";");

			st[n] = (struct open_frame){ .name = p, .len = len, .x = x };
			n++;
			p += len + (p[len] == ';');
		}
		for (int k = 0; k < n; k++) {
			st[k].b += s->n[1];
			st[k].a += (double)s->n[0] * c->scale;
		}
		x += s->n[1];
	}
	free(st);
	return 0;
}

int ks_diff_write_svg(const struct ks_folded2 *f, const char *title, FILE *out)
{
	struct svg_ctx c = { .out = out, .total_b = f->total[1] };
	int err, h;

	c.scale = f->total[0] ? (double)f->total[1] / (double)f->total[0] : 0;
	if (!c.total_b)
		return -ENODATA;
	err = walk(&c, f);
	if (err)
		return err;
	h = PAD_TOP + (c.depth_max + 1) * FRAME_H + PAD;
	fprintf(out,
		"<?xml version=\"1.0\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" xmlns=\"http://www.w3.org/2000/svg\">\n"
		"<style>text { font-family: monospace; font-size: 12px; fill: #000; pointer-events: none }</style>\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n<text x=\"%d\" y=\"20\" style=\"font-size:16px\">",
		SVG_W, h, SVG_W, h, PAD);
	xml(out, title, strlen(title));
	fprintf(out, "</text>\n<text x=\"%d\" y=\"36\">widths: B (%llu samples); red: B grew, blue: B shrank, against A (%llu samples, scaled to B's total)</text>\n",
		PAD, (unsigned long long)f->total[1], (unsigned long long)f->total[0]);
	c.pass = 1;
	err = walk(&c, f);
	if (err)
		return err;
	fputs("</svg>\n", out);
	return ks_stream_status(out);
}

struct by_change {
	const struct ks_folded2 *f;
	double sa, sb;
};

static double change_of(const struct by_change *c, size_t i)
{
	return (double)c->f->v[i].n[1] * c->sb - (double)c->f->v[i].n[0] * c->sa;
}

static int by_abs_change(const void *x, const void *y, void *ctx)
{
	double a = fabs(change_of(ctx, *(const size_t *)x)), b = fabs(change_of(ctx, *(const size_t *)y));

	return (a < b) - (a > b);
}

int ks_diff_write_folded_text(const struct ks_folded2 *f, FILE *out)
{
	double sa = f->total[0] ? 100.0 / (double)f->total[0] : 0, sb = f->total[1] ? 100.0 / (double)f->total[1] : 0;
	size_t *order = malloc((f->n + 1) * sizeof(*order));
	struct by_change c = { f, sa, sb };

	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < f->n; i++)
		order[i] = i;
	qsort_r(order, f->n, sizeof(*order), by_abs_change, &c);
	fprintf(out, "A: %llu samples, B: %llu samples, %zu stacks, the largest change first\n%8s %8s %8s  STACK\n",
		(unsigned long long)f->total[0], (unsigned long long)f->total[1], f->n, "A %", "B %", "CHANGE");
	for (size_t k = 0; k < f->n; k++) {
		size_t i = order[k];
		double a = (double)f->v[i].n[0] * sa, b = (double)f->v[i].n[1] * sb;

		fprintf(out, "%8.2f %8.2f %+8.2f  ", a, b, b - a);
		ks_sanitize_put(out, f->v[i].stack, NULL);
		fputc('\n', out);
	}
	free(order);
	return ks_stream_status(out);
}
