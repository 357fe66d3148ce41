/* Unit tests of the cumulative accumulator on synthetic delta reports: monotonic counters, the cap's other row, the time-to-live, gauges without a sample. */
#include "test.h"
#include "core/accum.h"

/* A delta row keyed (comm, pid) with @count events of @ns each. */
static void delta_row(struct ks_report *r, const char *comm, int64_t pid, uint64_t count, uint64_t ns)
{
	struct ks_row *w = ks_report_add_row(r);

	if (!w)
		exit(2);
	ks_row_key_str(w, "comm", comm);
	ks_row_key_num(w, "pid", pid);
	ks_row_val(w, "count", KS_VAL_COUNT, count);
	ks_row_val(w, "total_ns", KS_VAL_NS, count * ns);
	ks_row_val(w, "depth", KS_VAL_GAUGE, count);
	w->hist = calloc(1, sizeof(*w->hist));
	if (!w->hist)
		exit(2);
	for (uint64_t i = 0; i < count; i++)
		ks_hist_record(w->hist, ns);
	if (count)
		ks_row_sub_add(w, "EINTR", 1);
	w->sort = count;
}

static const struct ks_row *find_row(const struct ks_report *r, const char *comm, int64_t pid)
{
	for (int i = 0; i < r->nrows; i++)
		if (!strcmp(r->rows[i].keys[0].str, comm) && (pid < 0 || r->rows[i].keys[1].num == pid))
			return &r->rows[i];
	return NULL;
}

static uint64_t val(const struct ks_row *row, const char *name)
{
	for (int v = 0; row && v < row->nvals; v++)
		if (!strcmp(row->vals[v].name, name))
			return row->vals[v].v;
	return 0;
}

static uint64_t counter(const struct ks_report *r, const char *name)
{
	for (int i = 0; i < r->ncounters; i++)
		if (!strcmp(r->counters[i].name, name))
			return r->counters[i].num;
	return ~0ull;
}

/* 100 marks of deltas over 8 keys: every cumulative counter only grows and the sums are exact. */
TEST(counters_never_decrease_over_100_marks)
{
	struct ks_accum a;
	uint64_t prev[8] = { 0 }, want[8] = { 0 }, prev_hist[8] = { 0 }, lost = 0;
	unsigned int seed = 7;

	ks_accum_init(&a, "syscalls", 0, 0);
	for (int m = 0; m < 100; m++) {
		struct ks_report d, snap;
		char name[8];

		ks_report_init(&d, "syscalls", "tp_btf");
		/* some keys have no events in some marks, and rows come in a different order each time */
		for (int k = 0; k < 8; k++) {
			int key = (k + m) % 8;
			uint64_t n = (uint64_t)(rand_r(&seed) % 5);

			if (!n && key % 2)
				continue;
			snprintf(name, sizeof(name), "p%d", key);
			delta_row(&d, name, 100 + key, n, 1000);
			want[key] += n;
		}
		ks_report_lost(&d, "map_full", 1);
		ks_report_counter(&d, "forks", 2);
		ASSERT_EQ_INT(ks_accum_add(&a, &d), 0);
		ks_report_free(&d);
		ASSERT_EQ_INT(ks_accum_view(&a, &snap), 0);
		EXPECT_TRUE(snap.lost >= lost);
		lost = snap.lost;
		for (int k = 0; k < 8; k++) {
			const struct ks_row *row;

			snprintf(name, sizeof(name), "p%d", k);
			row = find_row(&snap, name, 100 + k);
			if (!row)
				continue;
			EXPECT_TRUE(val(row, "count") >= prev[k]);
			EXPECT_TRUE(row->hist && row->hist->count >= prev_hist[k]);
			EXPECT_EQ_U64(val(row, "count"), want[k]);
			EXPECT_EQ_U64(val(row, "total_ns"), want[k] * 1000);
			EXPECT_EQ_U64(row->hist->count, want[k]);
			prev[k] = val(row, "count");
			prev_hist[k] = row->hist->count;
		}
		EXPECT_TRUE(snap.nrows <= 8); /* a key with nothing yet has no row */
		ks_accum_view_free(&snap);
	}
	EXPECT_EQ_U64(lost, 100);
	{
		struct ks_report snap;

		ASSERT_EQ_INT(ks_accum_view(&a, &snap), 0);
		EXPECT_EQ_U64(counter(&snap, "forks"), 200);
		EXPECT_EQ_U64(snap.lost_by[0].num, 100);
		EXPECT_EQ_U64(counter(&snap, "other_folds"), 0);
		ks_accum_view_free(&snap);
	}
	ks_accum_free(&a);
}

/* Past the cap, new keys land in one "other" row; other_folds says how many rows went there. */
TEST(cap_folds_into_other)
{
	struct ks_accum a;
	struct ks_report d, snap;
	const struct ks_row *other;
	uint64_t total = 0;

	ks_accum_init(&a, "x", 10, 0);
	ks_report_init(&d, "x", NULL);
	for (int k = 0; k < 15; k++) {
		char name[8];

		snprintf(name, sizeof(name), "k%02d", k);
		delta_row(&d, name, k, (uint64_t)k + 1, 10);
		total += (uint64_t)k + 1;
	}
	ASSERT_EQ_INT(ks_accum_add(&a, &d), 0);
	/* the same keys again: the first ten keep their rows, the rest fold again */
	ASSERT_EQ_INT(ks_accum_add(&a, &d), 0);
	ks_report_free(&d);
	ASSERT_EQ_INT(ks_accum_view(&a, &snap), 0);
	EXPECT_EQ_INT(snap.nrows, 11);
	other = find_row(&snap, "other", -1);
	ASSERT_TRUE(other != NULL);
	/* keys k10..k14 carried 11+12+13+14+15 = 65 events, twice */
	EXPECT_EQ_U64(val(other, "count"), 130);
	EXPECT_EQ_U64(counter(&snap, "other_folds"), 10);
	{
		uint64_t sum = 0;

		for (int i = 0; i < snap.nrows; i++)
			sum += val(&snap.rows[i], "count");
		EXPECT_EQ_U64(sum, 2 * total); /* nothing dropped */
	}
	ks_accum_view_free(&snap);
	ks_accum_free(&a);
}

/*
 * At the cap, rows no delta changed for idle_marks (an exited thread's) leave to make room, and a
 * new key gets its own row rather than "other": serve by thread on a busy host had its 1000 rows
 * full of exited threads in 12 s, and every later thread folded for the TTL's 10 minutes.
 */
TEST(cap_makes_room_from_idle_rows)
{
	struct ks_accum a;
	struct ks_report snap;

	ks_accum_init(&a, "x", 2, 100);
	a.idle_marks = 3;
	for (int m = 0; m < 6; m++) {
		struct ks_report d;

		ks_report_init(&d, "x", NULL);
		delta_row(&d, "busy", 1, 2, 5);
		if (m == 0)
			delta_row(&d, "gone", 2, 1, 5);
		if (m == 1)
			delta_row(&d, "early", 3, 1, 5); /* the cap is full, "gone" not idle yet: folds */
		if (m == 4)
			delta_row(&d, "new", 4, 1, 5); /* "gone" idle for 4 marks: it leaves, "new" stays */
		ASSERT_EQ_INT(ks_accum_add(&a, &d), 0);
		ks_report_free(&d);
	}
	ASSERT_EQ_INT(ks_accum_view(&a, &snap), 0);
	EXPECT_TRUE(find_row(&snap, "new", 4) != NULL);
	EXPECT_TRUE(find_row(&snap, "gone", 2) == NULL);
	EXPECT_EQ_U64(val(find_row(&snap, "busy", 1), "count"), 12);
	EXPECT_EQ_U64(val(find_row(&snap, "other", -1), "count"), 1);
	EXPECT_EQ_U64(counter(&snap, "other_folds"), 1);
	EXPECT_EQ_U64(counter(&snap, "expired_rows"), 1);
	ks_accum_view_free(&snap);
	ks_accum_free(&a);
}

/* A row no delta changed for ttl marks is dropped and counted; gauges take the last value. */
TEST(ttl_expires_quiet_rows)
{
	struct ks_accum a;
	struct ks_report snap;

	ks_accum_init(&a, "x", 0, 3);
	for (int m = 0; m < 6; m++) {
		struct ks_report d;

		ks_report_init(&d, "x", NULL);
		delta_row(&d, "busy", 1, 2, 5);
		if (m == 0)
			delta_row(&d, "once", 2, 1, 5);
		else
			delta_row(&d, "once", 2, 0, 5); /* present but unchanged */
		ASSERT_EQ_INT(ks_accum_add(&a, &d), 0);
		ks_report_free(&d);
		ASSERT_EQ_INT(ks_accum_view(&a, &snap), 0);
		EXPECT_EQ_INT(find_row(&snap, "once", 2) != NULL, m < 3);
		EXPECT_EQ_U64(counter(&snap, "expired_rows"), m < 3 ? 0 : 1);
		ks_accum_view_free(&snap);
	}
	ASSERT_EQ_INT(ks_accum_view(&a, &snap), 0);
	EXPECT_EQ_U64(val(find_row(&snap, "busy", 1), "count"), 12);
	EXPECT_EQ_U64(val(find_row(&snap, "busy", 1), "depth"), 2);
	ks_accum_view_free(&snap);
	ks_accum_free(&a);
}

/*
 * serve --pin: a restart adopts programs whose loss counters count from their load, so the
 * first delta holds every loss since; the saved totals' share comes off it, cause by cause,
 * never below zero, and a cause the totals lack stays whole.
 */
TEST(lost_less_takes_off_the_saved_losses)
{
	struct ks_report saved, d;

	ks_report_init(&saved, "x", NULL);
	ks_report_init(&d, "x", NULL);
	ks_report_lost(&saved, "map_full", 7);
	ks_report_lost(&saved, "recursion", 5);
	ks_report_lost(&saved, "gone", 3);	 /* not in the delta: nothing to take from */
	ks_report_lost(&d, "map_full", 10);	 /* 7 saved + 3 while no serve ran */
	ks_report_lost(&d, "recursion", 2);	 /* below what was saved (never expected): 0, not negative */
	ks_report_lost(&d, "start_collisions", 4); /* not saved: all of it is new */
	EXPECT_EQ_U64(ks_report_lost_less(&d, &saved), 9);
	EXPECT_EQ_U64(d.lost_by[0].num, 3);
	EXPECT_EQ_U64(d.lost_by[1].num, 0);
	EXPECT_EQ_U64(d.lost_by[2].num, 4);
	EXPECT_EQ_U64(d.lost, 7);
	ks_report_free(&saved);
	ks_report_free(&d);
}

/*
 * Gauges a window can leave without a sample (tcp's cwnd with only retransmits in it): the
 * empty window's 0 keeps the last real value; min and max gauges take the smallest and
 * largest real values, the others the newest; a row's first window may be the empty one.
 */
TEST(sampleless_gauges_keep_the_last_real_value)
{
	static const struct ks_column cmin = { "cwnd_min", KS_COL_GAUGE, KS_UNIT_COUNT, "" };
	static const struct ks_column cmax = { "cwnd_max", KS_COL_GAUGE, KS_UNIT_COUNT, "" };
	static const struct ks_column clast = { "cwnd_last", KS_COL_GAUGE, KS_UNIT_COUNT, "" };
	/* per window: has a sample, min, max, last */
	static const struct { bool has; uint64_t lo, hi, last; } win[] = {
		{ false, 0, 0, 0 }, { true, 8, 20, 12 }, { false, 0, 0, 0 }, { true, 10, 30, 10 }, { false, 0, 0, 0 },
	};
	static const uint64_t want[][3] = { { 0, 0, 0 }, { 8, 20, 12 }, { 8, 20, 12 }, { 8, 30, 10 }, { 8, 30, 10 } };
	struct ks_accum a;

	ks_accum_init(&a, "tcp", 0, 0);
	for (int m = 0; m < 5; m++) {
		struct ks_report d, snap;
		struct ks_row *w;

		ks_report_init(&d, "tcp", NULL);
		w = ks_report_add_row(&d);
		ASSERT_EQ_INT(w != NULL, 1);
		ks_row_key_str(w, "comm", "flow");
		ks_row_val(w, "retransmits", KS_VAL_COUNT, 1);
		ks_row_gauge(w, &cmin, win[m].has, win[m].lo, KS_GAUGE_MIN);
		ks_row_gauge(w, &cmax, win[m].has, win[m].hi, KS_GAUGE_MAX);
		ks_row_gauge(w, &clast, win[m].has, win[m].last, KS_GAUGE_LAST);
		ASSERT_EQ_INT(ks_accum_add(&a, &d), 0);
		ks_report_free(&d);
		ASSERT_EQ_INT(ks_accum_view(&a, &snap), 0);
		EXPECT_EQ_U64(val(find_row(&snap, "flow", -1), "cwnd_min"), want[m][0]);
		EXPECT_EQ_U64(val(find_row(&snap, "flow", -1), "cwnd_max"), want[m][1]);
		EXPECT_EQ_U64(val(find_row(&snap, "flow", -1), "cwnd_last"), want[m][2]);
		EXPECT_EQ_U64(val(find_row(&snap, "flow", -1), "retransmits"), (uint64_t)m + 1);
		ks_accum_view_free(&snap);
	}
	ks_accum_free(&a);
}

/*
 * The view is the totals, not a copy: its rows' histograms and breakdowns
 * are the accumulator's own (serve's snapshot used to duplicate every one
 * per period), its order is the sort's while the total keeps its own (the
 * index that finds a key's row still does: later deltas add to the same
 * rows), and the two counters go into the view only.
 */
TEST(view_reads_the_totals_in_sorted_order)
{
	struct ks_accum a;
	struct ks_report d, v;

	ks_accum_init(&a, "syscalls", 0, 0);
	ks_report_init(&d, "syscalls", "tp_btf");
	delta_row(&d, "few", 1, 1, 1000);
	delta_row(&d, "many", 2, 9, 1000);
	ASSERT_EQ_INT(ks_accum_add(&a, &d), 0);
	ks_report_free(&d);
	ASSERT_EQ_INT(ks_accum_view(&a, &v), 0);
	ASSERT_EQ_INT(v.nrows, 2);
	EXPECT_TRUE(!strcmp(v.rows[0].keys[0].str, "many"));
	EXPECT_TRUE(!strcmp(a.total.rows[0].keys[0].str, "few"));
	EXPECT_TRUE(v.rows[0].hist == a.total.rows[1].hist);
	EXPECT_TRUE(v.rows[1].sub == a.total.rows[0].sub);
	EXPECT_EQ_U64(counter(&v, "other_folds"), 0);
	EXPECT_EQ_U64(counter(&a.total, "other_folds"), ~0ull);
	ks_accum_view_free(&v);
	ks_report_init(&d, "syscalls", "tp_btf");
	delta_row(&d, "many", 2, 1, 1000);
	delta_row(&d, "few", 1, 3, 1000);
	ASSERT_EQ_INT(ks_accum_add(&a, &d), 0);
	ks_report_free(&d);
	ASSERT_EQ_INT(ks_accum_view(&a, &v), 0);
	ASSERT_EQ_INT(v.nrows, 2);
	EXPECT_EQ_U64(val(find_row(&v, "many", 2), "count"), 10);
	EXPECT_EQ_U64(val(find_row(&v, "few", 1), "count"), 4);
	EXPECT_EQ_U64(find_row(&v, "many", 2)->hist->count, 10);
	ks_accum_view_free(&v);
	ks_accum_free(&a);
}
