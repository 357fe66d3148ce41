/* Unit tests of the live view's data and drawing (output/tui.c): reports merged by pid, sort keys, the filter, views, 80 columns, hostile names escaped. */
#include "test.h"
#include "output/tui.h"

#define W 80
#define H 24
#define STRIDE (4 * W + 1)

static char screen[H * STRIDE];

/* A report of @collector with one row per pid: @vals[i] for value @val (and a histogram of it for biolat). */
static void fill(struct ks_report *r, const char *collector, const char *val, const uint32_t *pids,
		 const char *const *comms, const uint64_t *vals, int n)
{
	ks_report_init(r, collector, "tp_btf");
	for (int i = 0; i < n; i++) {
		struct ks_row *row = ks_report_add_row(r);

		ks_row_key_num(row, "pid", pids[i]);
		ks_row_key_str(row, "comm", comms[i]);
		if (val)
			ks_row_val(row, val, KS_VAL_COUNT, vals[i]);
		row->hist = calloc(1, sizeof(*row->hist));
		for (uint64_t k = 0; k < vals[i] && k < 1000; k++)
			ks_hist_record(row->hist, 1000);
	}
}

static const char *line(int y)
{
	return screen + (size_t)y * STRIDE;
}

/* The line of the first row whose text holds @s, or -1. */
static int find(const char *s)
{
	for (int y = 0; y < H; y++)
		if (strstr(line(y), s))
			return y;
	return -1;
}

static const uint32_t pids[] = { 10, 20, 30 };
static const char *const comms[] = { "alpha", "beta", "esc\x1b[2J" };

static void frame(struct ks_tui_frame *f, struct ks_report *rs)
{
	static const uint64_t sc[] = { 5, 50, 7 }, sc_ns[] = { 100, 200, 300 }, rq[] = { 3000, 1000, 2000 };
	static const uint64_t io[] = { 0, 2, 1 };

	memset(f, 0, sizeof(*f));
	fill(&rs[0], "syscalls", "count", pids, comms, sc, 3);
	for (int i = 0; i < 3; i++)
		ks_row_val(&rs[0].rows[i], "total_ns", KS_VAL_NS, sc_ns[i]);
	fill(&rs[1], "runqlat", "total_wait_ns", pids, comms, rq, 3);
	fill(&rs[2], "biolat", NULL, pids, comms, io, 3);
	f->reports = rs;
	f->nreports = 3;
	f->window_s = 1;
	f->tick = 4;
	for (int i = 0; i < 3; i++)
		ASSERT_EQ_INT(ks_tui_merge(f, &rs[i]), 0);
}

static void release(struct ks_tui_frame *f, struct ks_report *rs)
{
	for (int i = 0; i < 3; i++)
		ks_report_free(&rs[i]);
	ks_tui_frame_free(f);
}

TEST(merge_by_pid)
{
	struct ks_report rs[3];
	struct ks_tui_frame f;

	frame(&f, rs);
	ASSERT_EQ_INT(f.nprocs, 3);
	EXPECT_EQ_U64(f.procs[1].sc_count, 50);
	EXPECT_EQ_U64(f.procs[1].sc_ns, 200);
	EXPECT_EQ_U64(f.procs[0].runq_ns, 3000);
	EXPECT_EQ_U64(f.procs[1].io_count, 2);
	EXPECT_EQ_U64(f.procs[1].io_ns, 2000);
	EXPECT_TRUE(!strcmp(f.procs[2].comm, "esc\x1b[2J"));
	release(&f, rs);
}

TEST(sort_keys_reorder_and_filter)
{
	struct ks_report rs[3];
	struct ks_tui_frame f;
	struct ks_tui_state s;

	frame(&f, rs);
	ks_tui_state_init(&s);
	EXPECT_TRUE(ks_tui_key(&s, 's', 4));
	ks_tui_render(&f, &s, W, H, screen, STRIDE);
	EXPECT_TRUE(find("beta") < find("esc") && find("esc") < find("alpha"));
	EXPECT_TRUE(find("*SYSCALLS") >= 0);
	EXPECT_TRUE(ks_tui_key(&s, 'w', 4));
	ks_tui_render(&f, &s, W, H, screen, STRIDE);
	EXPECT_TRUE(find("alpha") < find("esc") && find("esc") < find("beta"));
	/* "/" then "et" and Enter: only beta */
	ks_tui_key(&s, '/', 4);
	ks_tui_key(&s, 'e', 4);
	ks_tui_key(&s, 't', 4);
	ks_tui_key(&s, '\r', 4);
	EXPECT_TRUE(!s.editing);
	ks_tui_render(&f, &s, W, H, screen, STRIDE);
	EXPECT_TRUE(find("beta") >= 0);
	EXPECT_EQ_INT(find("alpha"), -1);
	/* Escape clears it */
	EXPECT_TRUE(ks_tui_key(&s, 27, 4));
	ks_tui_render(&f, &s, W, H, screen, STRIDE);
	EXPECT_TRUE(find("alpha") >= 0);
	EXPECT_TRUE(!ks_tui_key(&s, 'q', 4) && s.quit);
	release(&f, rs);
}

TEST(views_switch)
{
	struct ks_report rs[3];
	struct ks_tui_frame f;
	struct ks_tui_state s;

	frame(&f, rs);
	ks_tui_state_init(&s);
	EXPECT_TRUE(ks_tui_key(&s, '\t', 4));
	EXPECT_EQ_INT(s.view, 1);
	EXPECT_TRUE(ks_tui_key(&s, '3', 4));
	EXPECT_TRUE(!ks_tui_key(&s, '4', 4)); /* no fifth view */
	EXPECT_EQ_INT(s.view, 3);
	ks_tui_render(&f, &s, W, H, screen, STRIDE);
	EXPECT_TRUE(find("[3:biolat]") == 0);
	EXPECT_TRUE(find("count") >= 0 && find("p99") >= 0);
	EXPECT_TRUE(ks_tui_key(&s, '\t', 4));
	EXPECT_EQ_INT(s.view, 0);
	release(&f, rs);
}

/* Every line fits 80 columns and holds no control byte: a name's ESC is drawn as \x1b. */
TEST(fits_and_escapes)
{
	struct ks_report rs[3];
	struct ks_tui_frame f;
	struct ks_tui_state s;
	char longname[KS_KEY_STR];

	frame(&f, rs);
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	ks_tui_proc_get(&f, 99, longname)->cpu_ns = 1;
	ks_tui_state_init(&s);
	for (int v = 0; v < 4; v++) {
		s.view = v;
		ASSERT_EQ_INT(ks_tui_render(&f, &s, W, H, screen, STRIDE), H);
		for (int y = 0; y < H; y++) {
			int cols = 0;

			for (const unsigned char *p = (const unsigned char *)line(y); *p; p++) {
				EXPECT_TRUE(*p >= 0x20 && *p != 0x7f);
				cols += (*p & 0xc0) != 0x80;
			}
			EXPECT_TRUE(cols <= W);
		}
		if (v == 0 || v == 1)
			EXPECT_TRUE(find("esc\\x1b[2J") >= 0);
	}
	EXPECT_TRUE(find("#4 ") == 1);
	release(&f, rs);
}

/* wall's view: per thread each state's share of its time in whole percent, a hostile name escaped, within 80 columns */
TEST(wall_view_shares)
{
	static const char *const cols[] = { "oncpu_ns", "runnable_ns", "throttled_ns", "blkio_ns", "uninterruptible_ns",
					    "lock_ns", "netpipe_ns", "sleep_ns", "other_sleep_ns", "other_ns" };
	static const uint64_t ns[2][10] = { { 300, 0, 0, 0, 0, 700, 0, 0, 0, 0 }, { 1, 0, 0, 0, 0, 0, 0, 0, 998, 1 } };
	struct ks_report r;
	struct ks_tui_frame f = { .reports = &r, .nreports = 1, .window_s = 1, .tick = 1 };
	struct ks_tui_state s;

	ks_report_init(&r, "wall", "tp_btf");
	for (int i = 0; i < 2; i++) {
		struct ks_row *row = ks_report_add_row(&r);

		ks_row_key_num(row, "tid", 100 + i);
		ks_row_key_str(row, "comm", i ? "esc\x1b[2J" : "spin");
		ks_row_val(row, "total_ns", KS_VAL_NS, 1000);
		for (int c = 0; c < 10; c++)
			ks_row_val(row, cols[c], KS_VAL_NS, ns[i][c]);
	}
	ks_tui_state_init(&s);
	s.view = 1;
	ASSERT_EQ_INT(ks_tui_render(&f, &s, W, H, screen, STRIDE), H);
	EXPECT_TRUE(find("    TID COMM            cpu% runq  thr   io    D lock  net  slp idle  oth") == 3);
	EXPECT_TRUE(find("    100 spin              30    0    0    0    0   70    0    0    0    0") == 4);
	EXPECT_TRUE(find("    101 esc\\x1b[2J         0    0    0    0    0    0    0    0  100    0") == 5);
	for (int y = 0; y < H; y++)
		EXPECT_TRUE(strlen(line(y)) <= W);
	ks_report_free(&r);
}
