/* The live view's data and drawing (output/tui.h): processes merged from collector reports, keys, the screen as lines; no terminal calls, so it is unit-tested. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/sanitize.h"
#include "output/tui.h"

void ks_tui_state_init(struct ks_tui_state *s)
{
	memset(s, 0, sizeof(*s));
	s->sort = KS_TUI_CPU;
}

/* The sort key of each process column, by its letter. */
static const char sort_keys[KS_TUI_NCOLS] = {
	[KS_TUI_PID] = 'p', [KS_TUI_COMM] = 'n', [KS_TUI_CPU] = 'c', [KS_TUI_RUNQ] = 'w',
	[KS_TUI_SC_COUNT] = 's', [KS_TUI_SC_TIME] = 't', [KS_TUI_IO_COUNT] = 'i', [KS_TUI_IO_TIME] = 'o',
};

bool ks_tui_key(struct ks_tui_state *s, int key, int nviews)
{
	size_t n = strlen(s->filter);

	if (s->editing) {
		if (key == '\n' || key == '\r') {
			s->editing = false;
		} else if (key == 27) {
			s->editing = false;
			s->filter[0] = '\0';
		} else if (key == 127 || key == 8) {
			if (n)
				s->filter[n - 1] = '\0';
		} else if (key >= 0x20 && key < 0x7f && n + 1 < sizeof(s->filter)) {
			/* printable ASCII only: the filter is drawn on the screen as typed */
			s->filter[n] = (char)key;
			s->filter[n + 1] = '\0';
		} else {
			return false;
		}
		return true;
	}
	if (key == 'q' || key == 'Q') {
		s->quit = true;
		return false;
	}
	if (key == '\t') {
		s->view = (s->view + 1) % (nviews > 0 ? nviews : 1);
		return true;
	}
	if (key >= '0' && key <= '9') {
		if (key - '0' >= nviews)
			return false;
		s->view = key - '0';
		return true;
	}
	if (key == '/') {
		s->editing = true;
		s->filter[0] = '\0';
		return true;
	}
	if (key == 27 && s->filter[0]) {
		s->filter[0] = '\0';
		return true;
	}
	for (int c = 0; c < KS_TUI_NCOLS; c++) {
		if (sort_keys[c] == key) {
			s->sort = (enum ks_tui_col)c;
			return true;
		}
	}
	return false;
}

struct ks_tui_proc *ks_tui_proc_get(struct ks_tui_frame *f, uint32_t pid, const char *comm)
{
	struct ks_tui_proc *p;

	/* linear: a window holds hundreds of processes and each report is merged once a second */
	for (int i = 0; i < f->nprocs; i++)
		if (f->procs[i].pid == pid)
			return &f->procs[i];
	if (f->nprocs == f->cap) {
		int cap = f->cap ? f->cap * 2 : 256;
		void *np = realloc(f->procs, (size_t)cap * sizeof(*f->procs));

		if (!np)
			return NULL;
		f->procs = np;
		f->cap = cap;
	}
	p = &f->procs[f->nprocs++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	if (comm)
		snprintf(p->comm, sizeof(p->comm), "%s", comm);
	return p;
}

static const struct ks_val *row_val(const struct ks_row *row, const char *name)
{
	for (int i = 0; i < row->nvals; i++)
		if (!strcmp(row->vals[i].name, name))
			return &row->vals[i];
	return NULL;
}

static const struct ks_key *row_key(const struct ks_row *row, const char *name)
{
	for (int i = 0; i < row->nkeys; i++)
		if (!strcmp(row->keys[i].name, name))
			return &row->keys[i];
	return NULL;
}

int ks_tui_merge(struct ks_tui_frame *f, const struct ks_report *r)
{
	enum { SC, RQ, BIO } kind;

	if (!strcmp(r->collector, "syscalls"))
		kind = SC;
	else if (!strcmp(r->collector, "runqlat"))
		kind = RQ;
	else if (!strcmp(r->collector, "biolat"))
		kind = BIO;
	else
		return 0;
	for (int i = 0; i < r->nrows; i++) {
		const struct ks_row *row = &r->rows[i];
		const struct ks_key *pid = row_key(row, "pid"), *comm = row_key(row, "comm");
		const struct ks_val *v;
		struct ks_tui_proc *p;

		if (!pid || !pid->is_num)
			continue;
		p = ks_tui_proc_get(f, (uint32_t)pid->num, comm && !comm->is_num ? comm->str : NULL);
		if (!p)
			return -ENOMEM;
		if (!p->comm[0] && comm && !comm->is_num)
			snprintf(p->comm, sizeof(p->comm), "%s", comm->str);
		switch (kind) {
		case SC:
			v = row_val(row, "count");
			p->sc_count += v ? v->v : 0;
			v = row_val(row, "total_ns");
			p->sc_ns += v ? v->v : 0;
			break;
		case RQ:
			v = row_val(row, "total_wait_ns");
			p->runq_ns += v ? v->v : 0;
			break;
		case BIO:
			if (row->hist) {
				p->io_count += row->hist->count;
				p->io_ns += row->hist->sum;
			}
			break;
		}
	}
	return 0;
}

void ks_tui_frame_free(struct ks_tui_frame *f)
{
	free(f->procs);
	f->procs = NULL;
	f->nprocs = f->cap = 0;
}

/* One line being written: @p bytes used of @cap, @cols display columns of @w. */
struct line {
	char *buf;
	size_t p, cap;
	int cols, w;
};

/* Appends @s up to the line's width (@s already safe for the terminal: ASCII or sanitized UTF-8). */
static void put_raw(struct line *l, const char *s)
{
	for (; *s && l->cols < l->w; ) {
		size_t n = 1;

		if ((unsigned char)*s >= 0x80) {
			n = (size_t)ks_utf8_len((const unsigned char *)s);
			if (!n)
				n = 1;
		}
		if (l->p + n + 1 > l->cap)
			break;
		memcpy(l->buf + l->p, s, n);
		l->p += n;
		s += n;
		l->cols++;
	}
	l->buf[l->p] = '\0';
}

/* Appends at most @n display columns of @s. */
static void put_cut(struct line *l, const char *s, int n)
{
	int w = l->w;

	/* cut at the cell's width: a long name never pushes the columns after it */
	if (l->cols + n < w)
		l->w = l->cols + n;
	put_raw(l, s);
	l->w = w;
}

/* A cell @width columns wide (text cut, padded on the left when @right), then a space; @raw sanitized first. */
static void put_cell(struct line *l, const char *raw, int width, bool right, bool sanitize)
{
	char san[4 * KS_KEY_STR + 16], pad[128];
	const char *s = raw;
	int len = 0;

	if (sanitize) {
		ks_sanitize(raw, san, sizeof(san));
		s = san;
	}
	for (const char *q = s; *q; q++)
		len += ((unsigned char)*q & 0xc0) != 0x80;
	if (width > (int)sizeof(pad) - 1)
		width = (int)sizeof(pad) - 1;
	if (len > width)
		len = width;
	memset(pad, ' ', (size_t)(width - len));
	pad[width - len] = '\0';
	if (right)
		put_raw(l, pad);
	put_cut(l, s, len);
	if (!right)
		put_raw(l, pad);
	put_raw(l, " ");
}

static void put_fmt(struct line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put_fmt(struct line *l, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	put_raw(l, buf);
}

static const char *fmt_u64(uint64_t v, char *buf, size_t len)
{
	snprintf(buf, len, "%" PRIu64, v);
	return buf;
}

/* A time cell; nothing in the window shows as "-", so the rows that matter stand out. */
static const char *fmt_time(uint64_t ns, char *buf, size_t len)
{
	return ns ? ks_fmt_ns(ns, buf, len) : "-";
}

static uint64_t proc_col(const struct ks_tui_proc *p, enum ks_tui_col c)
{
	switch (c) {
	case KS_TUI_PID:
		return p->pid;
	case KS_TUI_CPU:
		return p->cpu_ns;
	case KS_TUI_RUNQ:
		return p->runq_ns;
	case KS_TUI_SC_COUNT:
		return p->sc_count;
	case KS_TUI_SC_TIME:
		return p->sc_ns;
	case KS_TUI_IO_COUNT:
		return p->io_count;
	case KS_TUI_IO_TIME:
		return p->io_ns;
	default:
		return 0;
	}
}

static enum ks_tui_col sort_col;

/* Decreasing by the column (pid and name increasing), ties by pid: the order does not jump between frames. */
static int proc_cmp(const void *a, const void *b)
{
	const struct ks_tui_proc *x = *(const struct ks_tui_proc *const *)a, *y = *(const struct ks_tui_proc *const *)b;
	uint64_t u, v;

	if (sort_col == KS_TUI_COMM) {
		int c = strcmp(x->comm, y->comm);

		if (c)
			return c;
	} else if (sort_col != KS_TUI_PID) {
		u = proc_col(x, sort_col);
		v = proc_col(y, sort_col);
		if (u != v)
			return u > v ? -1 : 1;
	}
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static const char *const proc_heads[KS_TUI_NCOLS] = { "PID", "COMM", "CPU%", "RUNQ", "SYSCALLS", "SYSTIME", "IO", "IOTIME" };
static const int proc_widths[KS_TUI_NCOLS] = { 7, 16, 6, 8, 9, 8, 6, 8 };

static bool name_match(const char *name, const char *filter)
{
	return !filter[0] || strstr(name, filter);
}

/* The processes view's rows from line @y on; returns the next free line. */
static int render_procs(const struct ks_tui_frame *f, const struct ks_tui_state *s, struct line *ls, int y, int h)
{
	const struct ks_tui_proc **order = calloc((size_t)f->nprocs + 1, sizeof(*order));
	int n = 0;

	for (int c = 0; c < KS_TUI_NCOLS; c++) {
		char head[24];

		/* the sort column is marked, so the screen says what it is sorted by */
		snprintf(head, sizeof(head), "%s%s", c == (int)s->sort ? "*" : "", proc_heads[c]);
		put_cell(&ls[y], head, proc_widths[c], c != KS_TUI_COMM, false);
	}
	y++;
	if (!order) {
		put_raw(&ls[y], "out of memory");
		return y + 1;
	}
	for (int i = 0; i < f->nprocs; i++)
		if (name_match(f->procs[i].comm, s->filter))
			order[n++] = &f->procs[i];
	sort_col = s->sort;
	qsort(order, (size_t)n, sizeof(*order), proc_cmp);
	for (int i = 0; i < n && y < h; i++, y++) {
		const struct ks_tui_proc *p = order[i];
		char b[32];

		put_cell(&ls[y], fmt_u64(p->pid, b, sizeof(b)), proc_widths[KS_TUI_PID], true, false);
		put_cell(&ls[y], p->comm, proc_widths[KS_TUI_COMM], false, true);
		snprintf(b, sizeof(b), "%.1f", f->window_s > 0 ? (double)p->cpu_ns / 1e7 / f->window_s : 0.0);
		put_cell(&ls[y], b, proc_widths[KS_TUI_CPU], true, false);
		put_cell(&ls[y], fmt_time(p->runq_ns, b, sizeof(b)), proc_widths[KS_TUI_RUNQ], true, false);
		put_cell(&ls[y], fmt_u64(p->sc_count, b, sizeof(b)), proc_widths[KS_TUI_SC_COUNT], true, false);
		put_cell(&ls[y], fmt_time(p->sc_ns, b, sizeof(b)), proc_widths[KS_TUI_SC_TIME], true, false);
		put_cell(&ls[y], fmt_u64(p->io_count, b, sizeof(b)), proc_widths[KS_TUI_IO_COUNT], true, false);
		put_cell(&ls[y], fmt_time(p->io_ns, b, sizeof(b)), proc_widths[KS_TUI_IO_TIME], true, false);
	}
	free(order);
	return y;
}

static bool row_match(const struct ks_row *row, const char *filter)
{
	if (!filter[0])
		return true;
	for (int k = 0; k < row->nkeys; k++)
		if (!row->keys[k].is_num && strstr(row->keys[k].str, filter))
			return true;
	return false;
}

/* wall's states (its columns adding up to total_ns), headed as its view shows them */
static const struct {
	const char *col, *head;
} wall_states[] = {
	{ "oncpu_ns", "cpu%" },	 { "runnable_ns", "runq" }, { "throttled_ns", "thr" }, { "blkio_ns", "io" },
	{ "uninterruptible_ns", "D" }, { "lock_ns", "lock" },  { "netpipe_ns", "net" }, { "sleep_ns", "slp" },
	{ "other_sleep_ns", "idle" }, { "other_ns", "oth" },
};
#define WALL_NSTATES (int)(sizeof(wall_states) / sizeof(wall_states[0]))

/*
 * wall's view: per thread (tid, comm) each state's share of the thread's
 * time in the window, in whole percent (so ten states fit 80 columns).
 */
static int render_wall(const struct ks_report *r, const struct ks_tui_state *s, struct line *ls, int y, int h)
{
	put_cell(&ls[y], "TID", 7, true, false);
	put_cell(&ls[y], "COMM", 15, false, false);
	for (int c = 0; c < WALL_NSTATES; c++)
		put_cell(&ls[y], wall_states[c].head, 4, true, false);
	y++;
	for (int i = 0; i < r->nrows && y < h; i++) {
		const struct ks_row *row = &r->rows[i];
		const struct ks_val *tot = row_val(row, "total_ns");
		const struct ks_key *tid = row_key(row, "tid"), *comm = row_key(row, "comm");
		char b[32];

		if (!tot || !tot->v || !tid || !row_match(row, s->filter))
			continue;
		put_cell(&ls[y], (snprintf(b, sizeof(b), "%" PRId64, tid->num), b), 7, true, false);
		put_cell(&ls[y], comm ? comm->str : "", 15, false, true);
		for (int c = 0; c < WALL_NSTATES; c++) {
			const struct ks_val *v = row_val(row, wall_states[c].col);

			snprintf(b, sizeof(b), "%.0f", v ? (double)v->v * 100.0 / (double)tot->v : 0.0);
			put_cell(&ls[y], b, 4, true, false);
		}
		y++;
	}
	return y;
}

/* A collector's view: its key columns, then count, p50 and p99 as the text writer shows them. */
static int render_report(const struct ks_report *r, const struct ks_tui_state *s, struct line *ls, int y, int h)
{
	const struct ks_row *first = r->nrows ? &r->rows[0] : NULL;

	for (int k = 0; first && k < first->nkeys; k++)
		put_cell(&ls[y], first->keys[k].name, first->keys[k].is_num ? 8 : 16, first->keys[k].is_num, false);
	if (first) {
		put_cell(&ls[y], "count", 9, true, false);
		put_cell(&ls[y], "p50", 9, true, false);
		put_cell(&ls[y], "p99", 9, true, false);
	} else {
		put_raw(&ls[y], "(no rows in this window)");
	}
	y++;
	for (int i = 0; i < r->nrows && y < h; i++) {
		const struct ks_row *row = &r->rows[i];
		const struct ks_val *cv = row_val(row, "count");
		uint64_t count = cv ? cv->v : row->hist ? row->hist->count : 0;
		char b[48];

		if (!row_match(row, s->filter))
			continue;
		for (int k = 0; k < row->nkeys; k++) {
			const struct ks_key *key = &row->keys[k];

			if (key->is_num)
				put_cell(&ls[y], (snprintf(b, sizeof(b), "%" PRId64, key->num), b), 8, true, false);
			else
				put_cell(&ls[y], key->str, 16, false, true);
		}
		put_cell(&ls[y], fmt_u64(count, b, sizeof(b)), 9, true, false);
		if (row->hist && row->hist->count) {
			put_cell(&ls[y], ks_fmt_unit(r->hist_unit, ks_hist_percentile(row->hist, 0.50), b, sizeof(b)), 9,
				 true, false);
			put_cell(&ls[y], ks_fmt_unit(r->hist_unit, ks_hist_percentile(row->hist, 0.99), b, sizeof(b)), 9,
				 true, false);
		} else {
			put_cell(&ls[y], "-", 9, true, false);
			put_cell(&ls[y], "-", 9, true, false);
		}
		y++;
	}
	return y;
}

int ks_tui_render(const struct ks_tui_frame *f, const struct ks_tui_state *s, int w, int h, char *lines,
		  size_t stride)
{
	struct line ls[256];
	char b[32];
	int y = 0;

	if (h > (int)(sizeof(ls) / sizeof(ls[0])))
		h = (int)(sizeof(ls) / sizeof(ls[0]));
	if (h < 1 || w < 1)
		return 0;
	for (int i = 0; i < h; i++) {
		ls[i] = (struct line){ .buf = lines + (size_t)i * stride, .cap = stride, .w = w };
		ls[i].buf[0] = '\0';
	}
	/* header: the views, the window and what ksight itself costs */
	put_raw(&ls[y], "ksight top");
	for (int v = 0; v <= f->nreports && v < 10; v++)
		put_fmt(&ls[y], " %s%d:%s%s", v == s->view ? "[" : " ", v, v ? f->reports[v - 1].collector : "procs",
			v == s->view ? "]" : "");
	y++;
	if (y < h) {
		put_fmt(&ls[y], "#%d %.2fs  self cpu %.1f%%  bpf ", f->tick, f->window_s, f->self_cpu);
		if (f->bpf_known)
			put_fmt(&ls[y], "%s/s (%" PRIu64 " runs)", ks_fmt_ns(f->window_s > 0 ? (uint64_t)((double)f->bpf_ns / f->window_s) : 0, b, sizeof(b)), f->bpf_runs);
		else
			put_raw(&ls[y], "n/a (bpf_stats off)");
		put_fmt(&ls[y], "  lost %" PRIu64, f->lost);
		y++;
	}
	if (y < h) {
		if (s->editing || s->filter[0])
			put_fmt(&ls[y], "filter: %s%s  ", s->filter, s->editing ? "_" : "");
		if (f->cgroup) {
			put_raw(&ls[y], "cgroup: ");
			put_cell(&ls[y], f->cgroup, w, false, true);
		}
		y++;
	}
	/* the last line is the keys' help */
	if (y < h - 1) {
		if (s->view == 0 || s->view > f->nreports)
			render_procs(f, s, ls, y, h - 1);
		else if (!strcmp(f->reports[s->view - 1].collector, "wall"))
			render_wall(&f->reports[s->view - 1], s, ls, y, h - 1);
		else
			render_report(&f->reports[s->view - 1], s, ls, y, h - 1);
	}
	if (h > y)
		put_raw(&ls[h - 1], s->view == 0 ? "q quit  Tab/0-9 view  / filter  sort: c w s t i o p n"
						 : "q quit  Tab/0-9 view  / filter");
	return h;
}
