/* record --flight on synthetic chunks (no BPF, no root): the windows written around triggers (--trigger and --trigger-latency), whatever order the events come out of the rings in and however many triggers one batch holds. */
#include <stdlib.h>
#include <event-parse.h>
#include "events/filter.h"
#include "format/recfile.h"
#include "record/flight.h"
#include "flt_formats.h"
#include "test.h"

#define MS 1000000ull
#define RAW 64 /* sys_enter's record: common fields, id, args[6] */
#define MAX_EV 16384

struct ev {
	struct ks_rec_event h;
	char raw[RAW];
};

static struct ks_rec_tps tps;
static struct ks_rec_tp tp = { .sys = "raw_syscalls", .name = "sys_enter", .id = 443 };
static struct ks_flt_prog trig;
static char dir[64], path[96];

/* --flight 1M --trigger 'id == 3' --before 0.2 --after 0.2, with or without --trigger-all */
static struct ks_rec_opts opts(bool all)
{
	struct ks_flt_err err;
	struct ks_flt_expr *x;

	tp.format = (char *)fmt_sys_enter;
	tps = (struct ks_rec_tps){ .v = &tp, .n = 1, .cap = 1 };
	x = ks_flt_parse("id == 3", &err);
	if (!x || ks_flt_compile_format(x, "raw_syscalls", fmt_sys_enter, &trig, &err))
		abort();
	ks_flt_expr_free(x);
	return (struct ks_rec_opts){ .tps = &tps, .flight_bytes = 1u << 20, .trigger = &trig,
				     .before_ns = 200 * MS, .after_ns = 200 * MS, .trigger_all = all };
}

static struct ev mk(uint64_t ts, int cpu, long id)
{
	struct ev e = { .h = { .ts = ts, .tgid = 42, .len = RAW, .cpu = (uint16_t)cpu } };
	uint16_t type = 443;

	memcpy(e.raw, &type, 2);
	memcpy(e.raw + 8, &id, 8);
	return e;
}

/* One CPU's batch as the recorder hands it over: every event seen, then the chunk. */
static int batch(struct ks_flight *fl, struct ks_rec_writer *w, int cpu, const struct ev *v, int n)
{
	struct ks_rec_chunk c = { .type = KS_REC_EVENTS, .cpu = (uint32_t)cpu, .count = (uint32_t)n };

	for (int i = 0; i < n; i++)
		ks_flight_see(fl, &v[i].h);
	c.first_ts = v[0].h.ts;
	c.last_ts = v[n - 1].h.ts;
	return ks_flight_chunk(fl, w, &c, v, (uint32_t)(n * sizeof(*v)));
}

/* What the main loop does after each batch: fire a pending trigger; end a window once past it. */
static int step(struct ks_flight *fl, struct ks_rec_writer *w, uint64_t now)
{
	if (ks_flight_state(fl) == KS_FL_PENDING)
		return ks_flight_fire(fl, w);
	if (ks_flight_after_over(fl, now))
		ks_flight_window_end(fl);
	return 0;
}

static void cleanup(void)
{
	unlink(path);
	rmdir(dir);
}

static struct ks_rec_writer open_file(void)
{
	struct ks_rec_writer w;

	if (!dir[0]) {
		if (!mkdtemp(strcpy(dir, "/tmp/ks-test-flight.XXXXXX")))
			abort();
		atexit(cleanup);
	}
	snprintf(path, sizeof(path), "%s/f.ksr", dir);
	if (ks_rec_create(&w, path))
		abort();
	return w;
}

/* The file's events' timestamps (sorted), and how many are markers. */
static int read_back(uint64_t *ts, int max, int *markers)
{
	struct ks_rec_reader r;
	int n = 0;

	*markers = 0;
	if (ks_rec_open(&r, path))
		return -1;
	for (size_t i = 0; i < r.nchunks; i++) {
		const struct ks_rec_event *e;
		uint32_t off = 0;
		void *p;

		if (r.chunks[i].hdr.type != KS_REC_EVENTS || ks_rec_read(&r, i, &p))
			continue;
		while ((e = ks_rec_next_event(p, r.chunks[i].hdr.len, &off)) && n < max) {
			long id;

			memcpy(&id, (const char *)(e + 1) + 8, 8);
			*markers += id == 3;
			ts[n++] = e->ts;
		}
		free(p);
	}
	ks_rec_free(&r);
	for (int i = 1; i < n; i++) /* insertion sort: few, nearly sorted */
		for (int j = i; j > 0 && ts[j - 1] > ts[j]; j--) {
			uint64_t t = ts[j];

			ts[j] = ts[j - 1];
			ts[j - 1] = t;
		}
	return n;
}

/* Events every ms from @from to @to (ms), markers at the listed ms. */
static int fill(struct ev *v, int cpu, int from, int to, const int *marks, int nmarks)
{
	int n = 0;

	for (int t = from; t <= to; t++) {
		long id = 110; /* getppid */

		for (int m = 0; m < nmarks; m++)
			id = marks[m] == t ? 3 : id;
		v[n++] = mk((uint64_t)t * MS, cpu, id);
	}
	return n;
}

static struct ev v[MAX_EV];
static uint64_t got[MAX_EV];

/* The recording's end: the windows still open are written, the file closed and read back into got[]. */
static int end_run(struct ks_flight *fl, struct ks_rec_writer *w, struct ks_flight_stats *st, int *markers)
{
	int err = ks_flight_finish(fl, w);

	ks_flight_stats(fl, st);
	ks_flight_free(fl);
	if (ks_rec_close(w) || err)
		return -1;
	return read_back(got, MAX_EV, markers);
}

/* Windows opened, markers and events in the file as expected (each check reported). */
static bool counts(const struct ks_flight_stats *st, int markers, int n, uint64_t want_windows, int want_markers,
		   int want_n)
{
	bool ok = EXPECT_EQ_U64(st->triggers, want_windows);

	ok = EXPECT_EQ_INT(markers, want_markers) && ok;
	ok = EXPECT_EQ_INT(n, want_n) && ok;
	return EXPECT_EQ_U64(st->written, (uint64_t)n) && ok;
}

/* The CI failure: both markers came out of the ring in one batch; the second window lost its marker. */
TEST(two_triggers_in_one_batch)
{
	struct ks_rec_opts o = opts(true);
	struct ks_flight *fl = ks_flight_new(&o, 2);
	struct ks_rec_writer w = open_file();
	struct ks_flight_stats st;
	int marks[] = { 1000, 2000 }, n, nm;

	ASSERT_TRUE(fl);
	n = fill(v, 0, 500, 2100, marks, 2);
	ASSERT_EQ_INT(batch(fl, &w, 0, v, n), 0);
	ASSERT_EQ_INT(step(fl, &w, 2100 * MS), 0);
	ASSERT_EQ_INT(step(fl, &w, 2150 * MS), 0); /* window 1 is long over: ends, window 2 waits */
	ASSERT_EQ_INT(step(fl, &w, 2150 * MS), 0); /* window 2 fires from what is kept */
	n = fill(v, 0, 2101, 2600, NULL, 0);
	ASSERT_EQ_INT(batch(fl, &w, 0, v, n), 0);
	/* 800..1200 and 1800..2200, each event once */
	n = end_run(fl, &w, &st, &nm);
	ASSERT_TRUE(n >= 0 && counts(&st, nm, n, 2, 2, 2 * 401));
	for (int i = 0; i < n; i++)
		if (!EXPECT_TRUE((got[i] >= 800 * MS && got[i] <= 1200 * MS) || (got[i] >= 1800 * MS && got[i] <= 2200 * MS)))
			break;
	for (int i = 1; i < n; i++)
		if (!EXPECT_TRUE(got[i] > got[i - 1]))
			break;
}

/* A later marker on CPU 0 comes out before an earlier one on CPU 1: the windows are the markers', in time order. */
static void cross_cpu(bool all)
{
	struct ks_rec_opts o = opts(all);
	struct ks_flight *fl = ks_flight_new(&o, 2);
	struct ks_rec_writer w = open_file();
	struct ks_flight_stats st;
	int m0[] = { 2000 }, m1[] = { 1000 }, n, nm;

	ASSERT_TRUE(fl);
	/* one thread moving between CPUs: odd ms on CPU 0 (with the 2 s marker moved there), even on 1 */
	for (int cpu = 0; cpu < 2; cpu++) {
		int j = 0;

		n = fill(v, cpu, 500, 2600, cpu ? m1 : m0, 1);
		for (int i = 0; i < n; i++)
			if ((int)((v[i].h.ts / MS) % 2 || v[i].h.ts == 2000 * MS) != cpu)
				v[j++] = v[i];
		ASSERT_EQ_INT(batch(fl, &w, cpu, v, j), 0);
	}
	while (ks_flight_state(fl) == KS_FL_PENDING || ks_flight_state(fl) == KS_FL_AFTER)
		ASSERT_EQ_INT(step(fl, &w, 3000 * MS), 0);
	n = end_run(fl, &w, &st, &nm);
	ASSERT_TRUE(n >= 0 && counts(&st, nm, n, all ? 2 : 1, all ? 2 : 1, all ? 2 * 401 : 401));
	EXPECT_EQ_U64(n ? got[0] : 0, 800 * MS); /* the first window is the first marker's */
}

TEST(earliest_trigger_first_across_cpus)
{
	cross_cpu(false);
}

TEST(earliest_trigger_first_across_cpus_all)
{
	cross_cpu(true);
}

/*
 * One CPU's ring out of time order (a program preempted between its
 * timestamp and its ring reservation): an event of the window that comes
 * in a later chunk than newer ones is still written, and only once.
 */
TEST(out_of_order_within_a_cpu)
{
	struct ks_rec_opts o = opts(true);
	struct ks_flight *fl = ks_flight_new(&o, 2);
	struct ks_rec_writer w = open_file();
	struct ks_flight_stats st;
	int marks[] = { 1000 }, n, nm;

	ASSERT_TRUE(fl);
	n = fill(v, 0, 500, 1100, marks, 1);
	/* the event of 1050 ms comes out after those up to 1100 */
	struct ev late = v[550];
	memmove(v + 550, v + 551, (size_t)(n - 551) * sizeof(*v));
	v[n - 1] = late;
	ASSERT_EQ_INT(batch(fl, &w, 0, v, n - 1), 0);
	ASSERT_EQ_INT(step(fl, &w, 1100 * MS), 0);
	EXPECT_EQ_INT(ks_flight_state(fl), KS_FL_AFTER);
	/* the next chunk: the late one first, then on from 1101 */
	v[0] = late;
	n = 1 + fill(v + 1, 0, 1101, 1300, NULL, 0);
	ASSERT_EQ_INT(batch(fl, &w, 0, v, n), 0);
	ASSERT_EQ_INT(step(fl, &w, 1500 * MS), 0);
	n = end_run(fl, &w, &st, &nm);
	ASSERT_TRUE(n >= 0 && counts(&st, nm, n, 1, 1, 401));
	for (int i = 0; i < n; i++)
		if (!EXPECT_EQ_U64(got[i], (800 + (uint64_t)i) * MS))
			break;
}

/* A batch bigger than --flight: the chunk with the marker is not dropped for the ones after it before the window is written. */
TEST(marker_chunk_outlives_the_size)
{
	struct ks_rec_opts o = opts(false);
	struct ks_flight *fl;
	struct ks_rec_writer w = open_file();
	struct ks_flight_stats st;
	int marks[] = { 1000 }, n, nm;

	o.flight_bytes = 16 << 10; /* about 180 events */
	fl = ks_flight_new(&o, 1);
	ASSERT_TRUE(fl);
	/* three chunks of 300 events each in one batch, the marker in the first */
	for (int from = 900; from < 1800; from += 300) {
		n = fill(v, 0, from, from + 299, marks, 1);
		ASSERT_EQ_INT(batch(fl, &w, 0, v, n), 0);
	}
	ASSERT_EQ_INT(step(fl, &w, 1800 * MS), 0);
	/* what the batch had of the window: 900..1200 */
	n = end_run(fl, &w, &st, &nm);
	ASSERT_TRUE(n >= 0 && counts(&st, nm, n, 1, 1, 301));
	EXPECT_EQ_U64(n ? got[0] : 0, 900 * MS);
}

/* Events outside the windows are never written; the losses of chunks not written still reach the file. */
TEST(losses_of_dropped_chunks_kept)
{
	struct ks_rec_opts o = opts(false);
	struct ks_flight *fl = ks_flight_new(&o, 1);
	struct ks_rec_writer w = open_file();
	struct ks_rec_chunk c = { .type = KS_REC_EVENTS, .cpu = 0, .lost = 7 };
	struct ks_rec_reader r;
	uint64_t lost = 0;
	int marks[] = { 1000 }, n;

	ASSERT_TRUE(fl);
	n = fill(v, 0, 500, 1500, marks, 1);
	c.count = (uint32_t)n;
	c.first_ts = v[0].h.ts;
	c.last_ts = v[n - 1].h.ts;
	for (int i = 0; i < n; i++)
		ks_flight_see(fl, &v[i].h);
	ASSERT_EQ_INT(ks_flight_chunk(fl, &w, &c, v, (uint32_t)(n * sizeof(*v))), 0);
	ASSERT_EQ_INT(step(fl, &w, 1500 * MS), 0);
	c.lost = 5; /* a chunk after the window, with losses, dropped */
	ASSERT_EQ_INT(ks_flight_chunk(fl, &w, &c, v + n - 10, 10 * sizeof(*v)), 0);
	ASSERT_EQ_INT(step(fl, &w, 2000 * MS), 0);
	EXPECT_EQ_INT(ks_flight_state(fl), KS_FL_DONE);
	ASSERT_EQ_INT(ks_flight_chunk(fl, &w, &c, v + n - 10, 10 * sizeof(*v)), 0);
	ASSERT_EQ_INT(ks_flight_finish(fl, &w), 0);
	ks_flight_free(fl);
	ASSERT_EQ_INT(ks_rec_close(&w), 0);
	ASSERT_EQ_INT(ks_rec_open(&r, path), 0);
	for (size_t i = 0; i < r.nchunks; i++)
		lost += r.chunks[i].hdr.type == KS_REC_EVENTS ? r.chunks[i].hdr.lost : 0;
	ks_rec_free(&r);
	EXPECT_EQ_U64(lost, 7 + 5 + 5);
}

/* More triggers in one batch than can wait: the earliest KS_FLIGHT_MAX_QUEUE get windows, the rest are counted. */
TEST(triggers_over_the_queue_counted)
{
	struct ks_rec_opts o = opts(true);
	struct ks_flight *fl;
	struct ks_rec_writer w = open_file();
	struct ks_flight_stats st;
	int marks[KS_FLIGHT_MAX_QUEUE + 4], n, nm;

	o.before_ns = o.after_ns = 2 * MS;
	fl = ks_flight_new(&o, 1);
	ASSERT_TRUE(fl);
	for (int i = 0; i < KS_FLIGHT_MAX_QUEUE + 4; i++)
		marks[i] = 100 + 10 * i; /* windows of +-2 ms: none overlaps the next */
	n = fill(v, 0, 50, 100 + 10 * (KS_FLIGHT_MAX_QUEUE + 4), marks, KS_FLIGHT_MAX_QUEUE + 4);
	ASSERT_EQ_INT(batch(fl, &w, 0, v, n), 0);
	ks_flight_stats(fl, &st);
	EXPECT_EQ_U64(st.dropped, 4);
	n = end_run(fl, &w, &st, &nm);
	ASSERT_TRUE(n >= 0 && counts(&st, nm, n, KS_FLIGHT_MAX_QUEUE, KS_FLIGHT_MAX_QUEUE, KS_FLIGHT_MAX_QUEUE * 5));
	EXPECT_EQ_U64(st.dropped, 4);
}

/*
 * Bursts: more triggers than can wait, each within --after of the one
 * before, in one batch and out of order.  They join into windows as they
 * are queued, as the writer joins them (a window runs --after past its
 * first trigger; the next trigger past it opens the next), so none is
 * dropped and every marker is written.
 */
TEST(trigger_bursts_join_while_waiting)
{
	struct ks_rec_opts o = opts(true);
	struct ks_flight *fl = ks_flight_new(&o, 1);
	struct ks_rec_writer w = open_file();
	struct ks_flight_stats st;
	int marks[2 * (KS_FLIGHT_MAX_QUEUE + 4)], n, nm, nmarks = 0;

	ASSERT_TRUE(fl);
	/* burst one: 1000..1519 ms, every 2 ms; burst two: 3000..3519 ms */
	for (int b = 0; b < 2; b++)
		for (int i = 0; i < KS_FLIGHT_MAX_QUEUE + 4; i++)
			marks[nmarks++] = 1000 + 2000 * b + 2 * i;
	n = fill(v, 0, 500, 4500, marks, nmarks);
	/* the later burst's events first: a batch holds each CPU's ring in turn */
	ASSERT_EQ_INT(batch(fl, &w, 0, v + 2500, n - 2500), 0);
	ASSERT_EQ_INT(batch(fl, &w, 0, v, 2500), 0);
	ks_flight_stats(fl, &st);
	EXPECT_EQ_U64(st.dropped, 0);
	n = end_run(fl, &w, &st, &nm);
	/* a burst of 1000..1518 ms: windows from 1000, 1202 and 1404 ms, events 800..1604 ms written once */
	ASSERT_TRUE(n >= 0 && counts(&st, nm, n, 6, 2 * (KS_FLIGHT_MAX_QUEUE + 4), 2 * 805));
	EXPECT_EQ_U64(st.dropped, 0);
}

/* --trigger-latency raw_syscalls:sys_enter/raw_syscalls:sys_exit common_pid>20ms, --before 10ms --after 200ms */
static struct ks_rec_tp lat_tps[2] = {
	{ .sys = "raw_syscalls", .name = "sys_enter", .format = (char *)fmt_sys_enter, .id = 443 },
	{ .sys = "raw_syscalls", .name = "sys_exit", .format = (char *)fmt_sys_exit, .id = 442 },
};
static struct ks_rec_latency lat;

static struct ks_rec_opts lat_opts(bool all)
{
	tps = (struct ks_rec_tps){ .v = lat_tps, .n = 2, .cap = 2 };
	ks_rec_latency_free(&lat);
	lat.tep = tep_alloc();
	if (!lat.tep || tep_parse_event(lat.tep, fmt_sys_enter, strlen(fmt_sys_enter), "raw_syscalls") ||
	    tep_parse_event(lat.tep, fmt_sys_exit, strlen(fmt_sys_exit), "raw_syscalls") ||
	    ks_pair_parse_tep(&lat.pair, lat.tep, "raw_syscalls:sys_enter/raw_syscalls:sys_exit", "common_pid", "-",
			      "-", "-"))
		abort();
	lat.threshold_ns = 20 * MS;
	return (struct ks_rec_opts){ .tps = &tps, .flight_bytes = 1u << 20, .latency = &lat,
				     .before_ns = 10 * MS, .after_ns = 200 * MS, .trigger_all = all };
}

/* A sys_enter (@exit: sys_exit) of task @pid at @us microseconds. */
static struct ev mk_sc(uint64_t us, int cpu, bool exit, int pid)
{
	struct ev e = mk(us * 1000, cpu, 110);
	uint16_t type = exit ? 442 : 443;

	memcpy(e.raw, &type, 2);
	memcpy(e.raw + 4, &pid, 4);
	return e;
}

/* Task 0's getppid starts every ms from @from to @to on @cpu (starts that never end), then @extra. */
static int lat_fill(struct ev *out, int cpu, int from, int to, const struct ev *extra, int nextra)
{
	int n = 0;

	for (int t = from; t <= to; t++)
		out[n++] = mk_sc((uint64_t)t * 1000, cpu, false, 0);
	for (int i = 0; i < nextra; i++)
		out[n++] = extra[i];
	return n;
}

/*
 * Task 1: 5 ms at 1000 ms (below); task 2: 50 ms at 1100.5 ms and 60 ms
 * at 2100.5 ms (above).  The first is a window from its start (the 10 ms
 * before its end would not reach it) to 200 ms after its end.
 */
static void latency_windows(bool all)
{
	struct ks_rec_opts o = lat_opts(all);
	struct ks_flight *fl = ks_flight_new(&o, 2);
	struct ks_rec_writer w = open_file();
	struct ks_flight_stats st;
	struct ev pairs[] = {
		mk_sc(1000000, 0, false, 1), mk_sc(1005000, 0, true, 1), mk_sc(1100500, 0, false, 2),
		mk_sc(1150500, 0, true, 2), mk_sc(2100500, 0, false, 2), mk_sc(2160500, 0, true, 2),
	};
	int n, nm;

	ASSERT_TRUE(fl);
	n = lat_fill(v, 0, 500, 2600, pairs, 6);
	ASSERT_EQ_INT(batch(fl, &w, 0, v, n), 0);
	EXPECT_EQ_INT(ks_flight_state(fl), KS_FL_IDLE); /* matched only once the rings were drained */
	ks_flight_settle(fl, 3000 * MS);
	EXPECT_EQ_INT(ks_flight_state(fl), KS_FL_PENDING);
	while (ks_flight_state(fl) == KS_FL_PENDING || ks_flight_state(fl) == KS_FL_AFTER)
		ASSERT_EQ_INT(step(fl, &w, 3000 * MS), 0);
	n = end_run(fl, &w, &st, &nm);
	/* 1100.5 .. 1350.5: 250 getppids and the pair; 2100.5 .. 2360.5: 260 and the pair */
	ASSERT_TRUE(n >= 0 && counts(&st, 0, n, all ? 2 : 1, 0, all ? 252 + 262 : 252));
	EXPECT_EQ_U64(n ? got[0] : 0, 1100500000ull);
	EXPECT_EQ_U64(n ? got[251] : 0, 1350000000ull);
	EXPECT_EQ_U64(st.lat_pairs, 3);
	EXPECT_EQ_U64(st.lat_over, 2);
	EXPECT_EQ_U64(st.lat.unmatched, 0);
	EXPECT_EQ_U64(st.lat.open, 1); /* task 0's last getppid */
}

TEST(latency_first_window_reaches_its_start)
{
	latency_windows(false);
}

TEST(latency_trigger_all)
{
	latency_windows(true);
}

/*
 * The start on CPU 1 comes out of its ring after the end on CPU 0 (a
 * task moved between CPUs): still one pair, and a trigger; an end whose
 * start has not come yet (past the drain) waits for the next drain.
 */
TEST(latency_start_after_its_end_across_cpus)
{
	struct ks_rec_opts o = lat_opts(true);
	struct ks_flight *fl = ks_flight_new(&o, 2);
	struct ks_rec_writer w = open_file();
	struct ks_flight_stats st;
	struct ev end0[] = { mk_sc(1150500, 0, true, 2), mk_sc(1500500, 0, true, 3) };
	struct ev start1[] = { mk_sc(1100500, 1, false, 2) };
	int n, nm;

	ASSERT_TRUE(fl);
	n = lat_fill(v, 0, 500, 1600, end0, 2);
	ASSERT_EQ_INT(batch(fl, &w, 0, v, n), 0);
	n = lat_fill(v, 1, 2000, 1999, start1, 1); /* CPU 1: only the start */
	ASSERT_EQ_INT(batch(fl, &w, 1, v, n), 0);
	/* a drain that began at 1490 ms: task 3's end (1500.5) is not matched yet */
	ks_flight_settle(fl, 1490 * MS);
	ks_flight_stats(fl, &st);
	EXPECT_EQ_U64(st.lat_over, 1);
	EXPECT_EQ_U64(st.lat.unmatched, 0);
	/* task 3's start, older than its end but out only now */
	end0[0] = mk_sc(1450500, 1, false, 3);
	ASSERT_EQ_INT(batch(fl, &w, 1, end0, 1), 0);
	while (ks_flight_state(fl) == KS_FL_PENDING || ks_flight_state(fl) == KS_FL_AFTER)
		ASSERT_EQ_INT(step(fl, &w, 3000 * MS), 0);
	n = end_run(fl, &w, &st, &nm);
	ASSERT_TRUE(n >= 0);
	EXPECT_EQ_U64(st.lat_pairs, 2);
	EXPECT_EQ_U64(st.lat_over, 2);
	EXPECT_EQ_U64(st.lat.unmatched, 0);
	EXPECT_EQ_U64(st.triggers, 2);
	EXPECT_EQ_U64(n ? got[0] : 0, 1100500000ull);
}

/* More starts open than the bound: the oldest give way, counted; their ends are unmatched. */
TEST(latency_evictions_counted)
{
	struct ks_rec_opts o = lat_opts(false);
	struct ks_flight *fl = ks_flight_new(&o, 1);
	struct ks_rec_writer w = open_file();
	struct ks_flight_stats st;
	int total = (int)ks_flight_lat_max_open(o.flight_bytes) + 1000, nm, n;

	ASSERT_TRUE(fl);
	/* 1 MiB of --flight: a quarter of it holds 4096 open starts */
	EXPECT_EQ_INT(total - 1000, 4096);
	EXPECT_EQ_INT((int)ks_flight_lat_max_open(4096), 1024);
	EXPECT_EQ_INT((int)ks_flight_lat_max_open(1ull << 40), 1 << 22);
	for (int base = 0; base < total; base += 10000) {
		n = 0;
		for (int i = base; i < total && i < base + 10000; i++)
			v[n++] = mk_sc(1000000 + (uint64_t)i, 0, false, i + 1);
		ASSERT_EQ_INT(batch(fl, &w, 0, v, n), 0);
	}
	/* the first task's end (evicted) and the last one's, both over 20 ms */
	v[0] = mk_sc(1000000 + (uint64_t)total + 30000, 0, true, 1);
	v[1] = mk_sc(1000000 + (uint64_t)total + 30001, 0, true, total);
	ASSERT_EQ_INT(batch(fl, &w, 0, v, 2), 0);
	n = end_run(fl, &w, &st, &nm);
	ASSERT_TRUE(n >= 0);
	EXPECT_EQ_U64(st.lat.evicted, 1000);
	EXPECT_EQ_U64(st.lat.unmatched, 1);
	EXPECT_EQ_U64(st.lat_pairs, 1);
	EXPECT_EQ_U64(st.triggers, 1);
	ks_rec_latency_free(&lat);
}
