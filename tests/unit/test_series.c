/* Unit tests of the series (core/series.c): reports moved in, rows found by their keys over time, histograms packed sparsely and read back exactly, the byte budget dropping whole oldest intervals, and the heatmap's cell grid and SVG (output/heatmap.c) built from it. */
#include "test.h"
#include "core/hash.h"
#include "core/hist.h"
#include "core/series.h"
#include "output/heatmap.h"

/* A report of @collector for interval @i (1 s windows ending at 100 + i s): one row per name, each with @v recorded @n times. */
static void mk(struct ks_report *r, const char *collector, int i, const char *const *names, int nnames, uint64_t v, int n)
{
	ks_report_init(r, collector, "tp_btf");
	r->interval = i;
	r->duration_s = 1;
	r->has_time = true;
	r->mono = (struct timespec){ 100 + i, 0 };
	r->wall = (struct timespec){ 1700000000 + i, 0 };
	for (int k = 0; k < nnames; k++) {
		struct ks_row *row = ks_report_add_row(r);

		ks_row_key_str(row, "syscall", names[k]);
		ks_row_key_num(row, "pid", 7);
		row->hist = calloc(1, sizeof(*row->hist));
		for (int j = 0; j < n; j++)
			ks_hist_record(row->hist, v);
	}
}

/* The count of a kept row's histogram, read from its packed form (-1: none). */
static int64_t hist_count(const struct ks_series *s, size_t i, const struct ks_row *row)
{
	struct ks_hist_view v;

	return row && ks_series_hist_view(s, i, row, 0, &v) ? (int64_t)v.count : -1;
}

static struct ks_row key(const char *name, int64_t pid)
{
	struct ks_row row = { 0 };

	ks_row_key_str(&row, "syscall", name);
	ks_row_key_num(&row, "pid", pid);
	return row;
}

TEST(add_moves_the_report_and_rows_are_found_by_keys)
{
	static const char *const ab[] = { "read", "write" }, *const b[] = { "write" };
	struct ks_series *s = ks_series_new(KS_SERIES_BUDGET);
	struct ks_report r;
	struct ks_row read = key("read", 7), read8 = key("read", 8), write = key("write", 7);

	ASSERT_TRUE(s);
	mk(&r, "syscalls", 1, ab, 2, 1000, 3);
	ASSERT_EQ_INT(ks_series_add(s, &r), 0);
	/* the caller's report is emptied, its header kept: freeing it frees nothing of the series' */
	EXPECT_EQ_INT(r.nrows, 0);
	EXPECT_TRUE(r.rows == NULL);
	EXPECT_EQ_STR(r.collector, "syscalls");
	ks_report_free(&r);
	mk(&r, "syscalls", 2, b, 1, 5000, 2);
	ASSERT_EQ_INT(ks_series_add(s, &r), 0);
	ks_report_free(&r);

	ASSERT_EQ_INT(ks_series_len(s), 2);
	EXPECT_EQ_INT(ks_series_at(s, 0)->interval, 1);
	EXPECT_TRUE(ks_series_at(s, 2) == NULL);
	/* read is in interval 1 only; write in both, with its own counts */
	ASSERT_TRUE(ks_series_row(s, 0, &read) != NULL);
	EXPECT_EQ_INT(hist_count(s, 0, ks_series_row(s, 0, &read)), 3);
	EXPECT_TRUE(ks_series_row(s, 1, &read) == NULL);
	EXPECT_EQ_INT(hist_count(s, 1, ks_series_row(s, 1, &write)), 2);
	/* every key counts: the same name with another pid is another row */
	EXPECT_TRUE(ks_series_row(s, 0, &read8) == NULL);
	EXPECT_TRUE(ks_series_row(s, 5, &read) == NULL);
	EXPECT_EQ_INT(ks_series_dropped(s), 0);
	ks_series_free(s);
}

TEST(keys_compare_by_name_kind_and_value)
{
	struct ks_row a = { 0 }, b = { 0 }, c = { 0 }, d = { 0 };

	ks_row_key_num(&a, "pid", 1);
	ks_row_key_str(&b, "pid", "1");
	ks_row_key_num(&c, "tid", 1);
	ks_row_key_num(&d, "pid", 1);
	EXPECT_TRUE(!ks_row_keys_eq(&a, &b)); /* a number is not its digits */
	EXPECT_TRUE(!ks_row_keys_eq(&a, &c));
	EXPECT_TRUE(ks_row_keys_eq(&a, &d));
	EXPECT_TRUE(ks_row_keys_hash(&a) == ks_row_keys_hash(&d));
	/* the fields are parted: "ab"+"c" is not "a"+"bc" */
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	ks_row_key_str(&a, "ab", "c");
	ks_row_key_str(&b, "a", "bc");
	EXPECT_TRUE(!ks_row_keys_eq(&a, &b));
	EXPECT_TRUE(ks_row_keys_hash(&a) != ks_row_keys_hash(&b));
}

TEST(many_rows_each_found)
{
	struct ks_series *s = ks_series_new(KS_SERIES_BUDGET);
	struct ks_report r;
	char name[32];

	ASSERT_TRUE(s);
	ks_report_init(&r, "syscalls", "tp");
	for (int i = 0; i < 3000; i++) {
		struct ks_row *row = ks_report_add_row(&r);

		snprintf(name, sizeof(name), "n%d", i);
		ks_row_key_str(row, "syscall", name);
		ks_row_key_num(row, "pid", i);
		row->sort = (uint64_t)i;
	}
	ASSERT_EQ_INT(ks_series_add(s, &r), 0);
	ks_report_free(&r);
	for (int i = 0; i < 3000; i++) {
		struct ks_row k;
		const struct ks_row *got;

		snprintf(name, sizeof(name), "n%d", i);
		k = key(name, i);
		got = ks_series_row(s, 0, &k);
		if (!EXPECT_TRUE(got && got->sort == (uint64_t)i))
			break;
	}
	ks_series_free(s);
}

TEST(budget_drops_whole_oldest_intervals)
{
	static const char *const one[] = { "read" };
	struct ks_report r;
	struct ks_series *s;
	struct timespec m, w;
	size_t each;

	/* the size of one report as the series counts it */
	mk(&r, "syscalls", 1, one, 1, 1000, 1);
	s = ks_series_new(KS_SERIES_BUDGET);
	ASSERT_TRUE(s);
	ASSERT_EQ_INT(ks_series_add(s, &r), 0);
	each = ks_series_bytes(s);
	/* the row, its one slot packed (a few bytes, not the 7.8 KiB of every slot) and the index */
	EXPECT_TRUE(each >= sizeof(struct ks_row));
	EXPECT_TRUE(each < sizeof(struct ks_hist));
	ks_series_free(s);
	ks_report_free(&r);

	/* room for four reports; intervals of two reports (two collectors of a `run`) */
	s = ks_series_new(4 * each + each / 2);
	ASSERT_TRUE(s);
	for (int i = 1; i <= 5; i++) {
		mk(&r, "syscalls", i, one, 1, 1000, i);
		ASSERT_EQ_INT(ks_series_add(s, &r), 0);
		ks_report_free(&r);
		mk(&r, "runqlat", i, one, 1, 1000, i);
		ASSERT_EQ_INT(ks_series_add(s, &r), 0);
		ks_report_free(&r);
		EXPECT_TRUE(ks_series_bytes(s) <= ks_series_budget(s));
	}
	/* intervals 4 and 5 kept, 1 to 3 dropped whole: never one collector of an interval without the other */
	EXPECT_EQ_INT(ks_series_dropped(s), 3);
	ASSERT_EQ_INT(ks_series_len(s), 4);
	EXPECT_EQ_INT(ks_series_at(s, 0)->interval, 4);
	EXPECT_EQ_STR(ks_series_at(s, 0)->collector, "syscalls");
	EXPECT_EQ_STR(ks_series_at(s, 1)->collector, "runqlat");
	EXPECT_EQ_INT(ks_series_at(s, 3)->interval, 5);
	EXPECT_EQ_INT(ks_series_bytes(s), 4 * each);
	/* the start stays the run's: interval 1's window start, 100 s */
	ASSERT_TRUE(ks_series_start(s, &m, &w));
	EXPECT_EQ_INT(m.tv_sec, 100);
	EXPECT_EQ_INT(w.tv_sec, 1700000000);
	ks_series_free(s);

	/* a budget smaller than one interval: the newest is kept, the one before dropped */
	s = ks_series_new(1);
	ASSERT_TRUE(s);
	for (int i = 1; i <= 3; i++) {
		mk(&r, "syscalls", i, one, 1, 1000, 1);
		ASSERT_EQ_INT(ks_series_add(s, &r), 0);
		ks_report_free(&r);
	}
	EXPECT_EQ_INT(ks_series_len(s), 1);
	EXPECT_EQ_INT(ks_series_at(s, 0)->interval, 3);
	EXPECT_EQ_INT(ks_series_dropped(s), 2);
	ks_series_free(s);
}

TEST(heatmap_grid_is_the_histograms_over_time)
{
	static const char *const rw[] = { "read", "write" }, *const w[] = { "write" };
	struct ks_series *s = ks_series_new(KS_SERIES_BUDGET);
	struct ks_row read = key("read", 7), write = key("write", 7);
	const struct ks_row **rows;
	struct ks_heatmap h;
	struct ks_report r;
	int nrows;

	ASSERT_TRUE(s);
	/* read: 3 x 1000 ns in interval 1, absent in 2, 4 x 1000 ns + 1 x 50000 ns in 3; another collector between */
	mk(&r, "syscalls", 1, rw, 2, 1000, 3);
	ASSERT_EQ_INT(ks_series_add(s, &r), 0);
	ks_report_free(&r);
	mk(&r, "runqlat", 1, rw, 1, 7, 100);
	ASSERT_EQ_INT(ks_series_add(s, &r), 0);
	ks_report_free(&r);
	mk(&r, "syscalls", 2, w, 1, 2000000, 9);
	ASSERT_EQ_INT(ks_series_add(s, &r), 0);
	ks_report_free(&r);
	mk(&r, "syscalls", 3, rw, 1, 1000, 4);
	ks_hist_record(r.rows[0].hist, 50000);
	ASSERT_EQ_INT(ks_series_add(s, &r), 0);
	ks_report_free(&r);

	ASSERT_EQ_INT(ks_heatmap_build(&h, s, "syscalls", &read), 0);
	ASSERT_EQ_INT(h.ncols, 3);
	/* the columns are the windows since the run's start (interval 1's start, 100 s) */
	EXPECT_NEAR(h.cols[0].t0, 0, 1e-9);
	EXPECT_NEAR(h.cols[2].t1, 3, 1e-9);
	EXPECT_EQ_INT(h.cols[1].interval, 2);
	/* buckets from 1000's slot to 50000's, the collector's own log-linear slots */
	EXPECT_EQ_INT(h.lo, ks_hist_slot(1000));
	EXPECT_EQ_INT(h.lo + h.nb - 1, ks_hist_slot(50000));
	EXPECT_EQ_INT(ks_heatmap_cell(&h, 0, ks_hist_slot(1000)), 3);
	EXPECT_EQ_INT(ks_heatmap_cell(&h, 1, ks_hist_slot(1000)), 0); /* absent: an empty column */
	EXPECT_EQ_INT(ks_heatmap_cell(&h, 2, ks_hist_slot(1000)), 4);
	EXPECT_EQ_INT(ks_heatmap_cell(&h, 2, ks_hist_slot(50000)), 1);
	EXPECT_EQ_INT(ks_heatmap_cell(&h, 2, ks_hist_slot(2000)), 0);
	EXPECT_EQ_INT(ks_heatmap_cell(&h, 3, ks_hist_slot(1000)), 0); /* outside the grid */
	EXPECT_EQ_INT(h.total, 8);
	EXPECT_EQ_INT(h.max, 4);
	ks_heatmap_release(&h);

	/* write has 3 + 9 events, read 8: write first; runqlat's rows are not syscalls' */
	ASSERT_EQ_INT(ks_heatmap_rows(s, "syscalls", 0, &rows, &nrows), 0);
	ASSERT_EQ_INT(nrows, 2);
	EXPECT_TRUE(ks_row_keys_eq(rows[0], &write));
	EXPECT_TRUE(ks_row_keys_eq(rows[1], &read));
	free(rows);
	ASSERT_EQ_INT(ks_heatmap_rows(s, "syscalls", 1, &rows, &nrows), 0);
	EXPECT_EQ_INT(nrows, 1);
	free(rows);
	ASSERT_EQ_INT(ks_heatmap_build(&h, s, "syscalls", &write), 0);
	EXPECT_EQ_INT(h.total, 12);
	EXPECT_EQ_INT(ks_heatmap_cell(&h, 1, ks_hist_slot(2000000)), 9);
	ks_heatmap_release(&h);
	ks_series_free(s);
}

TEST(heatmap_svg_escapes_names_and_blanks_empty_cells)
{
	static const char *const odd[] = { "a<b&\"c\x01" };
	struct ks_series *s = ks_series_new(KS_SERIES_BUDGET);
	struct ks_report r;
	char *buf = NULL;
	size_t len = 0;
	FILE *m;
	int cells = 0;

	ASSERT_TRUE(s);
	mk(&r, "syscalls", 1, odd, 1, 1000, 5);
	ks_hist_record(r.rows[0].hist, 1200000);
	ASSERT_EQ_INT(ks_series_add(s, &r), 0);
	ks_report_free(&r);
	m = open_memstream(&buf, &len);
	ASSERT_TRUE(m);
	EXPECT_EQ_INT(ks_write_heatmap(s, 10, m), 0);
	fclose(m);
	/* the name through the one sanitizer, then XML-quoted */
	EXPECT_TRUE(strstr(buf, "syscall=a&lt;b&amp;&quot;c\\x01 pid=7"));
	EXPECT_TRUE(!strchr(buf, '\x01'));
	/* two cells drawn (1000 ns x 5, 1.2 ms x 1), none for the empty buckets between */
	for (const char *p = buf; (p = strstr(p, "class=\"c\"")); p++)
		cells++;
	EXPECT_EQ_INT(cells, 2);
	EXPECT_TRUE(strstr(buf, "data-n=\"5\""));
	EXPECT_TRUE(strstr(buf, "<g class=\"col\" data-i=\"1\" data-t0=\"0.000\" data-t1=\"1.000\">"));
	EXPECT_TRUE(strstr(buf, "0.00-1.00 s, 992ns-1.02us: 5</title>"));
	/* the largest cell is the scale's top: viridis' yellow */
	EXPECT_TRUE(strstr(buf, "fill=\"#fde725\" data-lo=\"992\""));
	free(buf);
	ks_series_free(s);

	/* dropped intervals are told in the title */
	s = ks_series_new(1);
	ASSERT_TRUE(s);
	for (int i = 1; i <= 3; i++) {
		mk(&r, "syscalls", i, odd, 1, 1000, 1);
		ASSERT_EQ_INT(ks_series_add(s, &r), 0);
		ks_report_free(&r);
	}
	m = open_memstream(&buf, &len);
	ASSERT_TRUE(m);
	EXPECT_EQ_INT(ks_write_heatmap(s, 10, m), 0);
	fclose(m);
	EXPECT_TRUE(strstr(buf, "1 reports; 2 intervals dropped to keep the series within 0 MiB"));
	/* the one column kept is interval 3, at 2-3 s since the start */
	EXPECT_TRUE(strstr(buf, "data-i=\"3\" data-t0=\"2.000\" data-t1=\"3.000\""));
	free(buf);
	ks_series_free(s);
}

/* A fixed pseudo-random sequence (xorshift64), the same on every machine. */
static uint64_t rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* A histogram of kind @kind: empty, one edge slot, every slot, counts of every size, or a latency-like clump. */
static void fill(struct ks_hist *h, int kind, uint64_t *x)
{
	memset(h, 0, sizeof(*h));
	switch (kind) {
	case 0: /* empty */
		break;
	case 1: /* the first and the last slot, the largest counts */
		h->slots[0] = UINT64_MAX;
		h->slots[KS_HIST_SLOTS - 1] = UINT64_MAX - 1;
		h->count = UINT64_MAX;
		h->sum = UINT64_MAX;
		h->max = UINT64_MAX;
		break;
	case 2: /* every slot, counts of every byte length */
		for (unsigned int k = 0; k < KS_HIST_SLOTS; k++)
			h->slots[k] = (rnd(x) >> (k % 64)) | 1;
		h->count = rnd(x);
		h->sum = rnd(x);
		h->max = rnd(x);
		break;
	case 3: /* a header that the slots do not add up to (kept as it came) */
		h->count = 12345;
		h->slots[700] = 1;
		break;
	default: /* values recorded: a clump and a tail */
		for (int i = 0, n = (int)(rnd(x) % 2000); i < n; i++) {
			/* one draw a statement: the order C leaves to the compiler must not pick the values */
			uint64_t a = rnd(x), b = rnd(x), c = rnd(x);

			ks_hist_record(h, a % 4 ? 500 + b % 20000 : c >> (b % 64));
		}
		break;
	}
}

TEST(packed_histograms_read_back_exactly)
{
	static struct ks_hist h, back;
	static uint8_t buf[4 * 10 + KS_HIST_SLOTS * 12];
	uint64_t x = 0x9e3779b97f4a7c15ull;

	for (int i = 0; i < 400; i++) {
		struct ks_hist_view v;
		unsigned int k, last = 0, n = 0;
		uint64_t c;
		size_t len;

		fill(&h, i < 4 ? i : 4 + (int)(rnd(&x) % 8), &x);
		len = ks_hist_pack(&h, NULL);
		ASSERT_TRUE(len <= sizeof(buf));
		if (!EXPECT_EQ_U64(ks_hist_pack(&h, buf), len))
			break;
		memset(&back, 0xa5, sizeof(back));
		if (!EXPECT_EQ_INT(ks_hist_unpack(buf, len, &back), 0) || !EXPECT_TRUE(!memcmp(&h, &back, sizeof(h))))
			break;
		/* the view gives the same slots, increasing */
		ASSERT_EQ_INT(ks_hist_view_init(&v, buf, len), 0);
		while (ks_hist_view_next(&v, &k, &c)) {
			if (!EXPECT_TRUE((!n || k > last) && h.slots[k] == c))
				break;
			last = k;
			n++;
		}
		EXPECT_EQ_INT(n, v.nslots);
		/* a short buffer is never read past */
		EXPECT_EQ_INT(ks_hist_unpack(buf, len - 1, &back), -EINVAL);
	}
	/* a latency row is a few bytes a slot, not 8 for each of 976 */
	fill(&h, 9, &x);
	EXPECT_TRUE(ks_hist_pack(&h, NULL) < sizeof(h) / 10);
}

TEST(packed_bytes_not_of_pack_are_refused)
{
	static struct ks_hist h;
	static const struct {
		const char *why;
		uint8_t b[16];
		size_t len;
	} bad[] = {
		{ "nothing", { 0 }, 0 },
		{ "a header cut short", { 1, 2 }, 2 },
		{ "more slots than there are", { 0, 0, 0, 0xd1, 0x07 }, 5 },
		{ "a slot missing", { 1, 1, 1, 2, 0, 1 }, 6 },
		{ "a slot past the last", { 1, 1, 1, 1, 0xd0, 0x07, 1 }, 7 },
		{ "an empty slot", { 0, 0, 0, 1, 3, 0 }, 6 },
		{ "bytes after the histogram", { 0, 0, 0, 1, 3, 1, 9 }, 7 },
		{ "a number past 64 bits", { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0 }, 13 },
		{ "a number never ending", { 0x80, 0x80, 0x80 }, 3 },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (!EXPECT_EQ_INT(ks_hist_unpack(bad[i].b, bad[i].len, &h), -EINVAL))
			fprintf(stderr, "  accepted: %s\n", bad[i].why);
	/* the largest slot and a 64-bit count are fine */
	{
		static const uint8_t ok[] = { 0, 0, 0, 1, 0xcf, 0x07, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };

		EXPECT_EQ_INT(ks_hist_unpack(ok, sizeof(ok), &h), 0);
		EXPECT_EQ_U64(h.slots[KS_HIST_SLOTS - 1], UINT64_MAX);
	}
}

TEST(kept_rows_give_back_every_histogram)
{
	static struct ks_hist want[8][1 + KS_ROW_XHISTS], got;
	struct ks_series *s = ks_series_new(KS_SERIES_BUDGET);
	uint64_t x = 42;
	struct ks_report r;
	char name[16];

	ASSERT_TRUE(s);
	ks_report_init(&r, "mem", "tp");
	/* rows with no histogram, the main one only, extra ones only, and all of them */
	for (int i = 0; i < 8; i++) {
		struct ks_row *row = ks_report_add_row(&r);

		snprintf(name, sizeof(name), "r%d", i);
		ks_row_key_str(row, "site", name);
		for (int w = 0; w <= KS_ROW_XHISTS; w++) {
			struct ks_hist *h;

			if ((i == 0) || (i == 1 && w) || (i == 2 && !w) || (i == 3 && w > 2))
				continue;
			h = malloc(sizeof(*h));
			ASSERT_TRUE(h);
			fill(h, (i + w) % 6, &x);
			want[i][w] = *h;
			if (w)
				ks_row_xhist(row, "size_bytes", KS_UNIT_BYTES, h);
			else
				row->hist = h;
		}
	}
	ASSERT_EQ_INT(ks_series_add(s, &r), 0);
	ks_report_free(&r);
	for (int i = 0; i < 8; i++) {
		const struct ks_row *row = &ks_series_at(s, 0)->rows[i];
		int nx = i == 0 || i == 1 ? 0 : i == 3 ? 2 : KS_ROW_XHISTS;

		/* the dense copies are gone, the extra histograms' names stay */
		EXPECT_TRUE(row->hist == NULL);
		EXPECT_EQ_INT(row->nxhist, nx);
		for (int w = 0; w <= KS_ROW_XHISTS; w++) {
			bool has = !((i == 0) || (i == 1 && w) || (i == 2 && !w) || (i == 3 && w > 2));

			if (w && w <= nx) {
				EXPECT_TRUE(row->xhist[w - 1].h == NULL);
				EXPECT_EQ_STR(row->xhist[w - 1].name, "size_bytes");
			}
			if (!has) {
				EXPECT_EQ_INT(ks_series_hist(s, 0, row, w, &got), -ENOENT);
				continue;
			}
			memset(&got, 0x5a, sizeof(got));
			if (!EXPECT_EQ_INT(ks_series_hist(s, 0, row, w, &got), 0) ||
			    !EXPECT_TRUE(!memcmp(&got, &want[i][w], sizeof(got))))
				fprintf(stderr, "  row %d histogram %d\n", i, w);
		}
	}
	/* a row that is not the report's own, a report out of range: none */
	{
		struct ks_row other = key("r4", 7);

		EXPECT_EQ_INT(ks_series_hist(s, 0, &other, 0, &got), -ENOENT);
		EXPECT_EQ_INT(ks_series_hist(s, 1, &ks_series_at(s, 0)->rows[4], 0, &got), -ENOENT);
		EXPECT_EQ_INT(ks_series_hist(s, 0, &ks_series_at(s, 0)->rows[4], KS_ROW_XHISTS + 1, &got), -ENOENT);
	}
	ks_series_free(s);
}

/*
 * A fixed sequence of reports (two collectors, 12 intervals, rows coming and
 * going, histograms of every kind): the heatmap's cells are the dense
 * histograms' slots, and the SVG is byte for byte the one the series drew
 * when it kept dense histograms (its length and FNV-1a, measured at ea36f0c).
 */
#define SVG_LEN 4223571
#define SVG_FNV 0xf0378ede4a75d753ull
TEST(heatmap_from_packed_histograms_is_unchanged)
{
	static const char *const names[] = { "read", "write", "futex", "poll", "openat" };
	static struct ks_hist dense[12][5];
	struct ks_series *s = ks_series_new(KS_SERIES_BUDGET);
	uint64_t x = 7, cells = 0;
	struct ks_report r;
	struct ks_heatmap h;
	char *buf = NULL;
	size_t len = 0;
	FILE *m;

	ASSERT_TRUE(s);
	for (int i = 1; i <= 12; i++) {
		for (int c = 0; c < 2; c++) {
			mk(&r, c ? "runqlat" : "syscalls", i, names, 0, 0, 0);
			for (int k = 0; k < 5; k++) {
				struct ks_row *row;

				if (rnd(&x) % 4 == 0)
					continue; /* the row is absent from this interval */
				row = ks_report_add_row(&r);
				ks_row_key_str(row, "syscall", names[k]);
				ks_row_key_num(row, "pid", 7);
				row->hist = calloc(1, sizeof(*row->hist));
				ASSERT_TRUE(row->hist);
				fill(row->hist, k == 4 && i == 6 ? 1 : 4, &x);
				if (!c)
					dense[i - 1][k] = *row->hist;
			}
			ASSERT_EQ_INT(ks_series_add(s, &r), 0);
			ks_report_free(&r);
		}
	}
	for (int k = 0; k < 5; k++) {
		struct ks_row want = key(names[k], 7);

		ASSERT_EQ_INT(ks_heatmap_build(&h, s, "syscalls", &want), 0);
		for (int c = 0; c < 12; c++)
			for (unsigned int slot = 0; slot < KS_HIST_SLOTS; slot++) {
				cells += ks_heatmap_cell(&h, c, slot) != 0;
				if (!EXPECT_EQ_U64(ks_heatmap_cell(&h, c, slot), dense[c][k].slots[slot]))
					goto next;
			}
next:
		ks_heatmap_release(&h);
	}
	EXPECT_TRUE(cells > 500);
	m = open_memstream(&buf, &len);
	ASSERT_TRUE(m);
	EXPECT_EQ_INT(ks_write_heatmap(s, 0, m), 0);
	fclose(m);
	EXPECT_EQ_U64(len, SVG_LEN);
	EXPECT_EQ_U64(ks_fnv1a(buf, len, KS_FNV1A_INIT), SVG_FNV);
	free(buf);
	ks_series_free(s);
}
