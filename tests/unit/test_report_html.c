/* Unit tests of the report --html page writer (output/report_html.c): data built by hand in, HTML out; hostile names quoted, flame graphs embedded without their script, heatmaps and tables from the series and whole-window reports. */
#include "test.h"
#include "core/hist.h"
#include "core/series.h"
#include "output/report_html.h"
#include "output/stacks.h"

#define HOSTILE "<script>alert(1)</script>\"&\xff"
#define HOSTILE_Q "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&amp;\\xff"

/* A syscalls-like report: one row keyed by @name with @n values of @v ns and a count column. */
static void mk(struct ks_report *r, int interval, const char *name, uint64_t v, int n)
{
	struct ks_row *row;

	ks_report_init(r, "syscalls", "tp_btf");
	r->interval = interval;
	r->duration_s = 1;
	r->hist_name = "latency_ns";
	r->has_time = true;
	r->mono = (struct timespec){ 100 + interval, 0 };
	r->wall = (struct timespec){ 1700000000 + interval, 0 };
	row = ks_report_add_row(r);
	ks_row_key_str(row, "syscall", name);
	ks_row_val(row, "count", KS_VAL_COUNT, (uint64_t)n);
	row->hist = calloc(1, sizeof(*row->hist));
	for (int j = 0; j < n; j++)
		ks_hist_record(row->hist, v);
}

static void frames(struct ks_stacks *st, uint64_t v, const char *const *names)
{
	uint32_t f[8], n = 0;

	for (; names[n]; n++)
		f[n] = (uint32_t)ks_stacks_frame(st, names[n], n ? KS_FK_USER : KS_FK_COMM);
	ks_stacks_add(st, f, n, v);
}

static char *render(const struct ks_html_in *in)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	if (!m)
		return NULL;
	if (ks_write_report_html(in, m)) {
		fclose(m);
		free(buf);
		return NULL;
	}
	fclose(m);
	return buf;
}

static size_t count(const char *s, const char *what)
{
	size_t n = 0;

	for (const char *p = s; (p = strstr(p, what)); p++)
		n++;
	return n;
}

TEST(page_with_everything_quotes_every_name)
{
	struct ks_series *s = ks_series_new(1 << 20);
	struct ks_report total, r;
	struct ks_stacks on, off;
	const struct ks_html_kv kv[] = { { "host", "box" }, { "note", "why " HOSTILE }, { HOSTILE, "v" } };
	const struct ks_html_count ev[] = { { "sched:" HOSTILE, 42 } };
	const struct ks_html_cost cost[] = { { "syscalls", 2, 3, 5000000, 1000, 2.0, true, true } };
	char *html;

	ASSERT_TRUE(s != NULL);
	mk(&r, 1, HOSTILE, 1000, 5);
	ASSERT_EQ_INT(ks_series_add(s, &r), 0);
	ks_report_free(&r);
	mk(&r, 2, HOSTILE, 1000000, 7);
	ASSERT_EQ_INT(ks_series_add(s, &r), 0);
	ks_report_free(&r);
	mk(&total, 0, HOSTILE, 1000, 12345);
	ks_stacks_init(&on, "samples", "count", 10000000);
	frames(&on, 3, (const char *const[]){ "app", "main", HOSTILE, NULL });
	frames(&on, 1, (const char *const[]){ "app", "idle", NULL });
	ks_stacks_sort(&on);
	ks_stacks_init(&off, "offcpu", "nanoseconds", 0);
	frames(&off, 900, (const char *const[]){ "app", "read_wait", NULL });
	ks_stacks_sort(&off);

	html = render(&(struct ks_html_in){ .title = "f" HOSTILE, .manifest = kv, .nmanifest = 3, .totals = &total,
					     .ntotals = 1, .series = s, .events = ev, .nevents = 1, .events_lost = 9,
					     .cost = cost, .ncost = 1, .ksight_cpu_us = 250000, .oncpu = &on, .offcpu = &off });
	ASSERT_TRUE(html != NULL);
	EXPECT_TRUE(strstr(html, "content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\""));
	/* nothing a stranger gave is markup: no script at all (the flame graph's own is left out too) */
	EXPECT_EQ_U64(count(html, "<script"), 0);
	EXPECT_EQ_U64(count(html, "alert(1)</"), 0);
	EXPECT_TRUE(count(html, HOSTILE_Q) >= 6); /* title, h1, note, manifest key, table key, event, frame, heatmap */
	EXPECT_TRUE(strstr(html, "<blockquote class=\"note\">why " HOSTILE_Q "</blockquote>"));
	/* the table: the key, the histogram's count and percentiles, the count column */
	EXPECT_TRUE(strstr(html, "<td class=\"k\">" HOSTILE_Q "</td><td>12345</td><td>"));
	EXPECT_TRUE(strstr(html, "</td><td>12345</td></tr>"));
	/* a heatmap panel with a cell in each interval, inline (no XML declaration in HTML) */
	EXPECT_EQ_U64(count(html, "<figure class=\"hm\""), 1);
	EXPECT_EQ_U64(count(html, "data-lo="), 2);
	/* times since the series' start; a cell is a quarter octave (slots 108..111 hold 1000 ns) */
	EXPECT_TRUE(strstr(html, "<title>0.0-1.0 s, 896ns-1.02us: 5</title>"));
	EXPECT_TRUE(strstr(html, "<title>1.0-2.0 s, 918us-1.05ms: 7</title>"));
	EXPECT_EQ_U64(count(html, "<?xml"), 0);
	/* both flame graphs, their frames with hover titles */
	EXPECT_TRUE(strstr(html, "<div class=\"flame oncpu\"><svg"));
	EXPECT_TRUE(strstr(html, "<div class=\"flame offcpu\"><svg"));
	EXPECT_TRUE(strstr(html, "<title>read_wait ("));
	EXPECT_TRUE(strstr(html, "<tr><td class=\"k\">sched:" HOSTILE_Q "</td><td>42</td></tr>"));
	EXPECT_TRUE(strstr(html, "<p>42 events of 1 types; 9 lost</p>"));
	EXPECT_TRUE(strstr(html, "<td>1000</td><td>5.000 ms</td><td>5000 ns</td>"));
	EXPECT_TRUE(strstr(html, "ksight's own CPU: 0.250 s"));
	EXPECT_TRUE(strstr(html, "</body></html>\n"));
	free(html);

	/* without stacks, series or totals: those sections say so, no flame graph */
	html = render(&(struct ks_html_in){ .title = "empty" });
	ASSERT_TRUE(html != NULL);
	EXPECT_EQ_U64(count(html, "id=\"flame\""), 0);
	EXPECT_TRUE(strstr(html, "no whole-window report"));
	EXPECT_TRUE(strstr(html, "no interval reports"));
	EXPECT_EQ_U64(count(html, "<svg"), 0);
	free(html);
	ks_stacks_free(&on);
	ks_stacks_free(&off);
	ks_report_free(&total);
	ks_series_free(s);
}

TEST(page_flame_leaves_out_frames_under_a_pixel)
{
	struct ks_stacks on;
	char *html, *svg = NULL;
	size_t len = 0;
	FILE *m;

	/* 2002 samples on 1200 px: a sample is 0.6 px, so the 1-sample frames (cold, other and its x) are under a pixel */
	ks_stacks_init(&on, "samples", "count", 10000000);
	frames(&on, 2000, (const char *const[]){ "app", "main", "hot", NULL });
	frames(&on, 1, (const char *const[]){ "app", "main", "cold", NULL });
	frames(&on, 1, (const char *const[]){ "app", "other", "x", NULL });
	ks_stacks_sort(&on);
	html = render(&(struct ks_html_in){ .title = "f", .oncpu = &on });
	ASSERT_TRUE(html != NULL);
	EXPECT_EQ_U64(count(html, "<g class=\"f\""), 3); /* app, main, hot */
	EXPECT_TRUE(strstr(html, "<title>hot (2000 samples"));
	EXPECT_EQ_U64(count(html, "<title>cold ("), 0);
	EXPECT_EQ_U64(count(html, "<title>x ("), 0);
	/* three frames left out; the samples under the outermost of them (cold, other): 2 of 2002 */
	EXPECT_TRUE(strstr(html, ">3 frames narrower than 1 px left out (2 samples, 0.10%, drawn as their callers' width)</text>"));
	free(html);
	/* the standalone SVG (profile --svg) keeps every frame and says nothing */
	m = open_memstream(&svg, &len);
	ASSERT_TRUE(m != NULL);
	EXPECT_EQ_INT(ks_write_svg(&on, m), 0);
	fclose(m);
	EXPECT_EQ_U64(count(svg, "<g class=\"f\""), 6);
	EXPECT_EQ_U64(count(svg, "narrower"), 0);
	free(svg);
	ks_stacks_free(&on);
}
