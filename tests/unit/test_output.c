/* Unit tests of the output layer: text escaping and column units, the report model's limits and sort, the sink's errors and stop. */
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include "test.h"
#include "core/report.h"
#include "output/html.h"
#include "output/output.h"

static char *render(const struct ks_report *r, const char *writer)
{
	char *buf;
	size_t len;

	if (ks_writer_render(ks_writer_find(writer), r, &buf, &len))
		return NULL;
	return buf;
}

/* A task named with ESC and a newline cannot forge lines: every text byte is printable. */
TEST(text_report_escapes_names)
{
	struct ks_report r;
	struct ks_row *w;
	char *out;

	ks_report_init(&r, "syscalls", "tp_btf");
	w = ks_report_add_row(&r);
	ASSERT_TRUE(w != NULL);
	ks_row_key_str(w, "comm", "\x1b[31m\nFAKE");
	ks_row_val(w, "count", KS_VAL_COUNT, 3);
	ks_row_sub_add(w, "E\nX", 1);
	r.sub_name = "errnos";
	ks_report_list_add(&r, "unavailable", "a\rb");
	out = render(&r, "text");
	ASSERT_TRUE(out != NULL);
	for (const char *p = out; *p; p++)
		EXPECT_TRUE(*p == '\n' || (unsigned char)*p >= 0x20);
	EXPECT_EQ_INT(t_count_lines(out), 4); /* header, row, unavailable, lost */
	EXPECT_TRUE(strstr(out, "\\x1b[31m\\x0aFAKE") != NULL);
	EXPECT_TRUE(strstr(out, "E\\x0aX=1") != NULL);
	EXPECT_TRUE(strstr(out, "unavailable: a\\x0db\n") != NULL);
	free(out);
	ks_report_free(&r);
}

/* One unit per column, from its largest value; 300 ns beside milliseconds is not 0. */
TEST(text_one_unit_per_column)
{
	struct ks_report r;
	static const uint64_t v[] = { 5000000, 300, 0, 45000 };
	char *out;

	ks_report_init(&r, "x", NULL);
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct ks_row *w = ks_report_add_row(&r);

		ASSERT_TRUE(w != NULL);
		ks_row_key_num(w, "id", (int64_t)i);
		ks_row_val(w, "total_ns", KS_VAL_NS, v[i]);
		ks_row_val(w, "bytes", KS_VAL_BYTES, v[i] * 1024);
	}
	out = render(&r, "text");
	ASSERT_TRUE(out != NULL);
	EXPECT_EQ_STR(out, "id                        total      bytes\n"
			   "0                        5.00ms    4.77GiB\n"
			   "1                     0.00030ms 0.00029GiB\n"
			   "2                           0ms       0GiB\n"
			   "3                       0.045ms   0.043GiB\n"
			   "lost: 0\n");
	free(out);
	ks_report_free(&r);
}

/* A gauge with no sample (tcp's cwnd of a refused connect) is no reading: "-" in text, null in JSON, never 0. */
TEST(gauge_without_sample_is_no_value)
{
	static const struct ks_column cwnd = { "cwnd_last", KS_COL_GAUGE, KS_UNIT_COUNT, "cwnd" };
	struct ks_report r;
	char *out;

	ks_report_init(&r, "x", NULL);
	for (int i = 0; i < 2; i++) {
		struct ks_row *w = ks_report_add_row(&r);

		ASSERT_TRUE(w != NULL);
		ks_row_key_num(w, "id", i);
		EXPECT_EQ_INT(ks_row_gauge(w, &cwnd, i == 0, 10, KS_GAUGE_LAST), 0);
	}
	out = render(&r, "text");
	ASSERT_TRUE(out != NULL);
	EXPECT_EQ_STR(out, "id                    cwnd_last\n"
			   "0                            10\n"
			   "1                             -\n"
			   "lost: 0\n");
	free(out);
	out = render(&r, "json");
	ASSERT_TRUE(out != NULL);
	EXPECT_TRUE(strstr(out, "{\"id\":0,\"cwnd_last\":10}") != NULL);
	EXPECT_TRUE(strstr(out, "{\"id\":1,\"cwnd_last\":null}") != NULL);
	free(out);
	ks_report_free(&r);
}

TEST(row_overflow_is_an_error)
{
	struct ks_report r;
	struct ks_row *w;
	int err = 0;

	ks_report_init(&r, "x", NULL);
	w = ks_report_add_row(&r);
	ASSERT_TRUE(w != NULL);
	for (int i = 0; i < KS_ROW_VALS; i++)
		EXPECT_EQ_INT(ks_row_val(w, "v", KS_VAL_COUNT, 1), 0);
	EXPECT_EQ_INT(ks_report_overflow(&r), 0);
	err = ks_row_val(w, "v", KS_VAL_COUNT, 1);
	EXPECT_EQ_INT(err, -ENOSPC);
	for (int i = 0; i < KS_ROW_KEYS; i++)
		EXPECT_EQ_INT(ks_row_key_num(w, "k", i), 0);
	EXPECT_EQ_INT(ks_row_key_str(w, "k", "x"), -ENOSPC);
	EXPECT_EQ_INT(ks_report_overflow(&r), 2);
	ks_report_free(&r);
}

/* A long cgroup path in filters is kept whole; a long key is cut at a character, with a marker. */
TEST(long_strings_not_cut_mid_character)
{
	struct ks_report r;
	struct ks_row *w;
	char path[400], *out;

	memset(path, 0, sizeof(path));
	strcpy(path, "/");
	while (strlen(path) < 300)
		strcat(path, "\xd0\xb1/");
	ks_report_init(&r, "x", NULL);
	ks_report_meta_str(&r, "cgroup", path);
	w = ks_report_add_row(&r);
	ASSERT_TRUE(w != NULL);
	ks_row_key_str(w, "cgroup", path);
	EXPECT_EQ_STR(r.meta[0].str, path);
	EXPECT_TRUE(strlen(w->keys[0].str) < KS_KEY_STR);
	EXPECT_TRUE(!strcmp(w->keys[0].str + strlen(w->keys[0].str) - 3, "..."));
	out = render(&r, "json");
	ASSERT_TRUE(out != NULL);
	EXPECT_TRUE(strstr(out, "\\\\x") == NULL); /* cut between characters: no byte escaped */
	EXPECT_TRUE(strstr(out, "\"counters\":{}") != NULL);
	free(out);
	ks_report_free(&r);
}

TEST(json_lists_time_and_hist_unit)
{
	struct ks_report r;
	struct ks_row *w;
	char *out;

	ks_report_init(&r, "mem", NULL);
	ks_report_list_add(&r, "unavailable", "kmem:mm_page_alloc");
	ks_report_list_add(&r, "unavailable", "oom:mark_victim");
	r.has_time = true;
	r.wall = (struct timespec){ .tv_sec = 1800000000, .tv_nsec = 123456789 };
	r.mono = (struct timespec){ .tv_sec = 5, .tv_nsec = 7 };
	r.hist_unit = KS_UNIT_BYTES;
	r.hist_name = "size_bytes";
	w = ks_report_add_row(&r);
	ASSERT_TRUE(w != NULL);
	w->hist = calloc(1, sizeof(*w->hist));
	ASSERT_TRUE(w->hist != NULL);
	ks_hist_record(w->hist, 4096);
	out = render(&r, "json");
	ASSERT_TRUE(out != NULL);
	EXPECT_TRUE(strstr(out, "\"filters\":{},\"unavailable\":[\"kmem:mm_page_alloc\",\"oom:mark_victim\"]") != NULL);
	EXPECT_TRUE(strstr(out, "\"time\":{\"wall\":\"2027-01-15T08:00:00.123Z\",\"monotonic_ns\":5000000007}") != NULL);
	EXPECT_TRUE(strstr(out, "\"size_bytes\":{\"unit\":\"bytes\",") != NULL);
	free(out);
	ks_report_free(&r);
}

static struct ks_row *row3(struct ks_report *r, const char *name, int64_t pid, uint64_t count, uint64_t p99)
{
	struct ks_row *w = ks_report_add_row(r);

	if (!w)
		exit(2);
	ks_row_key_str(w, "comm", name);
	ks_row_key_num(w, "pid", pid);
	ks_row_val(w, "count", KS_VAL_COUNT, count);
	ks_row_val(w, "total_ns", KS_VAL_NS, count * 10);
	w->hist = calloc(1, sizeof(*w->hist));
	if (!w->hist)
		exit(2);
	ks_hist_record(w->hist, p99);
	w->sort = count;
	return w;
}

static void order(struct ks_report *r, char *buf, size_t len)
{
	buf[0] = 0;
	for (int i = 0; i < r->nrows; i++)
		snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", i ? "," : "", r->rows[i].keys[0].str);
}

TEST(sort_by_any_column)
{
	struct ks_report r;
	char b[64];

	ks_report_init(&r, "x", NULL);
	row3(&r, "b", 30, 5, 100);
	row3(&r, "a", 20, 9, 10);
	row3(&r, "c", 10, 1, 1000);
	EXPECT_EQ_INT(ks_report_sort_by(&r, "count"), 0);
	order(&r, b, sizeof(b));
	EXPECT_EQ_STR(b, "a,b,c");
	EXPECT_EQ_INT(ks_report_sort_by(&r, "p99"), 0);
	order(&r, b, sizeof(b));
	EXPECT_EQ_STR(b, "c,b,a");
	EXPECT_EQ_INT(ks_report_sort_by(&r, "total"), 0);
	order(&r, b, sizeof(b));
	EXPECT_EQ_STR(b, "a,b,c");
	EXPECT_EQ_INT(ks_report_sort_by(&r, "pid"), 0); /* keys: increasing */
	order(&r, b, sizeof(b));
	EXPECT_EQ_STR(b, "c,a,b");
	EXPECT_EQ_INT(ks_report_sort_by(&r, "comm"), 0);
	order(&r, b, sizeof(b));
	EXPECT_EQ_STR(b, "a,b,c");
	EXPECT_EQ_INT(ks_report_sort_by(&r, "nosuch"), -ENOENT);
	EXPECT_TRUE(ks_sort_key_valid("p99") && !ks_sort_key_valid("") && !ks_sort_key_valid("a b"));
	ks_report_free(&r);
}

/* A stream error is the real errno, and the next report on the same stream is judged alone. */
TEST(stream_errors_keep_errno_and_recover)
{
	FILE *f = fopen("/dev/full", "w");

	ASSERT_TRUE(f != NULL);
	fputs("x", f);
	EXPECT_EQ_INT(ks_stream_status(f), -ENOSPC);
	EXPECT_EQ_INT(ks_stream_status(f), 0); /* nothing pending: not failed again */
	fclose(f);
}

TEST(sink_file_mode_symlink_and_no_truncate)
{
	char dir[] = "/tmp/ks-sink-XXXXXX", path[64], link[64];
	struct ks_sink s;
	struct stat st;
	mode_t old = umask(0);

	ASSERT_TRUE(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/out", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	/* a new file: 0600 whatever the umask */
	EXPECT_EQ_INT(ks_sink_open(&s, path, NULL), 0);
	EXPECT_EQ_INT(ks_sink_write(&s, "hello\n", 6, 0), 0);
	EXPECT_EQ_INT(ks_sink_close(&s, true), 0);
	umask(old);
	ASSERT_TRUE(stat(path, &st) == 0);
	EXPECT_EQ_INT(st.st_mode & 0777, 0600);
	/* opened but never started (a failed load): the old content stays */
	EXPECT_EQ_INT(ks_sink_open(&s, path, NULL), 0);
	EXPECT_EQ_INT(ks_sink_close(&s, false), 0);
	ASSERT_TRUE(stat(path, &st) == 0);
	EXPECT_EQ_INT((int)st.st_size, 6);
	/* started: emptied, then written */
	EXPECT_EQ_INT(ks_sink_open(&s, path, NULL), 0);
	EXPECT_EQ_INT(ks_sink_start(&s), 0);
	EXPECT_EQ_INT(ks_sink_write(&s, "x\n", 2, 0), 0);
	EXPECT_EQ_INT(ks_sink_close(&s, true), 0);
	ASSERT_TRUE(stat(path, &st) == 0);
	EXPECT_EQ_INT((int)st.st_size, 2);
	/* a symlink is refused */
	ASSERT_TRUE(symlink(path, link) == 0);
	fprintf(stderr, "(an error line about a symbolic link is expected)\n");
	EXPECT_EQ_INT(ks_sink_open(&s, link, NULL), -ELOOP);
	/* a file created by a run that never started is removed */
	snprintf(path, sizeof(path), "%s/new", dir);
	EXPECT_EQ_INT(ks_sink_open(&s, path, NULL), 0);
	EXPECT_EQ_INT(ks_sink_close(&s, false), 0);
	EXPECT_TRUE(access(path, F_OK) != 0);
	unlink(link);
	snprintf(path, sizeof(path), "%s/out", dir);
	unlink(path);
	rmdir(dir);
}

/* A full pipe nobody reads: once a stop is asked, the write gives up within the grace. */
TEST(sink_stop_abandons_blocked_pipe)
{
	static char big[1 << 20];
	volatile sig_atomic_t stop = 0;
	struct ks_sink s;
	struct timespec a, b;
	int p[2];

	ASSERT_TRUE(pipe(p) == 0);
	ks_sink_stdout(&s, &stop);
	s.fd = p[1];
	s.is_reg = false;
	memset(big, 'x', sizeof(big));
	stop = SIGTERM;
	clock_gettime(CLOCK_MONOTONIC, &a);
	EXPECT_EQ_INT(ks_sink_write(&s, big, sizeof(big), 200), -EINTR);
	clock_gettime(CLOCK_MONOTONIC, &b);
	EXPECT_TRUE((double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9 < 1.0);
	/* the reader gone: EPIPE, not EIO (SIGPIPE ignored here) */
	signal(SIGPIPE, SIG_IGN);
	close(p[0]);
	stop = 0;
	EXPECT_EQ_INT(ks_sink_write(&s, "x", 1, 0), -EPIPE);
	close(p[1]);
}

/* Columns declared once render the docs table, and rows filled from them carry the kinds. */
TEST(schema_renders_docs_and_rows)
{
	static const struct ks_column cols[] = {
		{ "count", KS_COL_COUNTER, KS_UNIT_COUNT, "calls" },
		{ "total_ns", KS_COL_DURATION, KS_UNIT_NS, "time in the call" },
		{ "queued", KS_COL_GAUGE, KS_UNIT_COUNT, "requests in flight at the end" },
		{ NULL, 0, 0, NULL },
	};
	static const struct ks_schema schema = { cols, "latency_ns", KS_UNIT_NS, "call latency", NULL, .hist_cols = NULL };
	struct ks_report r;
	struct ks_row *w;
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	ASSERT_TRUE(m != NULL);
	EXPECT_EQ_INT(ks_schema_write_md(&schema, m), 0);
	fclose(m);
	EXPECT_EQ_STR(buf, "| field | kind | unit | meaning |\n|---|---|---|---|\n"
			   "| `count` | counter | count | calls |\n"
			   "| `total_ns` | duration | ns | time in the call |\n"
			   "| `queued` | gauge | count | requests in flight at the end |\n"
			   "| `latency_ns` | histogram | ns | call latency |\n");
	free(buf);
	ks_report_init(&r, "x", NULL);
	w = ks_report_add_row(&r);
	ASSERT_TRUE(w != NULL);
	for (int i = 0; i < 3; i++)
		EXPECT_EQ_INT(ks_row_col(w, &cols[i], 5), 0);
	EXPECT_EQ_INT(w->vals[1].kind, KS_VAL_NS);
	EXPECT_EQ_INT(w->vals[2].kind, KS_VAL_GAUGE);
	ks_report_free(&r);
}

/* The text layout is the collector's (its schema), not set on each report: tcp's "rtt_" columns and whole addresses. */
TEST(text_layout_from_the_schema)
{
	static const struct ks_schema tcp_like = { NULL, "rtt_ns", KS_UNIT_NS, "smoothed RTT", NULL,
						   .hist_cols = "rtt_", .keys_whole = true };
	static const char addr[] = "[2001:db8:0:0:1:2:3:4]:44321"; /* 28 columns: past the 20 a key gets */
	struct ks_report r;
	struct ks_row *w;
	struct ks_hist *h = calloc(1, sizeof(*h));
	char *plain, *laid;

	ASSERT_TRUE(h != NULL);
	ks_hist_record(h, 250000);
	ks_report_init(&r, "tcp", "tp_btf");
	r.hist_text = false;
	w = ks_report_add_row(&r);
	ASSERT_TRUE(w != NULL);
	ks_row_key_str(w, "remote", addr);
	ks_row_val(w, "count", KS_VAL_COUNT, 1);
	w->hist = h;
	plain = render(&r, "text");
	r.schema = &tcp_like;
	laid = render(&r, "text");
	ASSERT_TRUE(plain && laid);
	/* without a schema: bare percentile names, the key cut at 20 columns */
	EXPECT_TRUE(strstr(plain, "  p50") && !strstr(plain, "rtt_p50"));
	EXPECT_TRUE(strstr(plain, "[2001:db8:0:0:1:2:3:") && !strstr(plain, addr));
	/* with it: what the percentiles are of, and the address whole */
	EXPECT_TRUE(strstr(laid, " rtt_p50   rtt_p90   rtt_p99   rtt_max") != NULL);
	EXPECT_TRUE(strstr(laid, addr) != NULL);
	free(plain);
	free(laid);
	ks_report_free(&r);
}

/* A schema's shares: each of the next columns also as its tenth-of-a-percent share of the first, adding up to 100.0 (thirds: 33.4, 33.3, 33.3). */
TEST(text_shares_add_up_to_100)
{
	static const struct ks_schema wall_like = { NULL, NULL, KS_UNIT_NS, NULL, NULL, .shares = 3 };
	struct ks_report r;
	struct ks_row *w;
	char *out;

	ks_report_init(&r, "wall", NULL);
	r.schema = &wall_like;
	w = ks_report_add_row(&r);
	ASSERT_TRUE(w != NULL);
	ks_row_key_num(w, "tid", 1);
	ks_row_val(w, "total_ns", KS_VAL_NS, 3000);
	ks_row_val(w, "a_ns", KS_VAL_NS, 1000);
	ks_row_val(w, "b_ns", KS_VAL_NS, 1000);
	ks_row_val(w, "c_ns", KS_VAL_NS, 1000);
	ks_row_val(w, "d_ns", KS_VAL_NS, 7); /* past the shares: time only */
	w = ks_report_add_row(&r);
	ASSERT_TRUE(w != NULL);
	ks_row_key_num(w, "tid", 2);
	for (int i = 0; i < 5; i++)
		ks_row_val(w, (const char *[]){ "total_ns", "a_ns", "b_ns", "c_ns", "d_ns" }[i], KS_VAL_NS, 0);
	out = render(&r, "text");
	ASSERT_TRUE(out != NULL);
	EXPECT_EQ_STR(out, "tid                       total          a       %          b       %          c       %          d\n"
			   "1                        3.00us     1.00us    33.4     1.00us    33.3     1.00us    33.3        7ns\n"
			   "2                           0us        0us       -        0us       -        0us       -        0ns\n"
			   "lost: 0\n");
	free(out);
	ks_report_free(&r);
}

/* serve's index page from hand-built reports: the table row by row, a hostile name escaped, a missing hook "?". */
TEST(index_html_escapes_and_counts)
{
	struct ks_report r[2];
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	ASSERT_TRUE(m != NULL);
	ks_report_init(&r[0], "tcp", "tp_btf");
	ASSERT_TRUE(ks_report_add_row(&r[0]) && ks_report_add_row(&r[0]));
	ks_report_lost(&r[0], "lost", 3);
	ks_report_lost(&r[0], "ringbuf", 4);
	ks_report_init(&r[1], "<b>\"x\"&", NULL);
	EXPECT_EQ_INT(ks_write_index_html(r, 2, 2.5, m), 0);
	fclose(m);
	EXPECT_EQ_STR(buf,
		      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>ksight exporter</title></head><body>\n"
		      "<h1>ksight exporter</h1>\n<p><a href=\"/metrics\">/metrics</a> &middot; <a href=\"/healthz\">/healthz</a> "
		      "&middot; <a href=\"/debug/pprof/profile?seconds=10\">/debug/pprof/profile?seconds=10</a> (a CPU profile, "
		      "pprof)</p>\n<table border=\"1\"><tr><th>collector</th><th>hook</th><th>series</th><th>events lost</th>"
		      "<th>losses by cause</th></tr>\n"
		      "<tr><td>tcp</td><td>tp_btf</td><td>2</td><td>7</td><td>lost=3 ringbuf=4 </td></tr>\n"
		      "<tr><td>&lt;b&gt;&quot;x&quot;&amp;</td><td>?</td><td>0</td><td>0</td><td></td></tr>\n"
		      "</table>\n<p>drain period 2.5 s</p>\n</body></html>\n");
	free(buf);
	ks_report_free(&r[0]);
	ks_report_free(&r[1]);
}
