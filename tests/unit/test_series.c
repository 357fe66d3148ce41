/* Unit tests of the series (core/series.c): reports moved in, rows found by their keys over time, the byte budget dropping whole oldest intervals, and the heatmap's cell grid (output/heatmap.c) built from it. */
#include "test.h"
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
	EXPECT_EQ_INT(ks_series_row(s, 0, &read)->hist->count, 3);
	EXPECT_TRUE(ks_series_row(s, 1, &read) == NULL);
	EXPECT_EQ_INT(ks_series_row(s, 1, &write)->hist->count, 2);
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
	EXPECT_TRUE(each >= sizeof(struct ks_hist) + sizeof(struct ks_row));
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
