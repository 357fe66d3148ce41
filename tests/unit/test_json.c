/* Unit tests of the JSON writer and of the report's text and JSON renderings, checked by exact text and by jq. */
#include <locale.h>
#include "test.h"
#include "core/json.h"
#include "core/report.h"
#include "output/output.h"

/* What a writer wrote into a memory stream. */
struct mem {
	char *buf;
	size_t len;
	FILE *f;
};

static void mem_open(struct mem *m)
{
	memset(m, 0, sizeof(*m));
	m->f = open_memstream(&m->buf, &m->len);
	if (!m->f) {
		perror("open_memstream");
		exit(2);
	}
}

/* Closes the stream; m->buf stays until free(). */
static char *mem_close(struct mem *m)
{
	fclose(m->f);
	return m->buf;
}

/* A JSON writer on a fresh memory stream. */
static struct ks_json *json_open(struct mem *m)
{
	struct ks_json *j;

	mem_open(m);
	j = ks_json_new(m->f);
	if (!j) {
		perror("ks_json_new");
		exit(2);
	}
	return j;
}

/* Frees the writer and returns what it wrote (m->buf, for free()). */
static char *json_close(struct mem *m, struct ks_json *j)
{
	ks_json_free(j);
	return mem_close(m);
}

/*
 * Runs `jq -c FILTER` on @json and returns its output without the final
 * newline (malloc'd), or NULL when jq rejects the input or is missing.
 * -e: an input that parses to false or null also fails.
 */
static char *jq(const char *json, const char *filter)
{
	char path[] = "/tmp/ksight-test-json.XXXXXX", cmd[512], *out = NULL;
	size_t cap = 0, len = 0;
	FILE *p;
	int fd = mkstemp(path), st;
	char c;

	if (fd < 0 || write(fd, json, strlen(json)) != (ssize_t)strlen(json)) {
		perror("jq input");
		exit(2);
	}
	close(fd);
	snprintf(cmd, sizeof(cmd), "jq -e -c '%s' <%s 2>/dev/null", filter, path);
	p = popen(cmd, "r");
	if (!p) {
		perror("popen");
		exit(2);
	}
	while (fread(&c, 1, 1, p) == 1) {
		if (len + 2 > cap) {
			cap = cap ? cap * 2 : 256;
			out = realloc(out, cap);
			if (!out)
				exit(2);
		}
		out[len++] = c;
	}
	st = pclose(p);
	unlink(path);
	if (st != 0) {
		free(out);
		return NULL;
	}
	if (!out)
		out = calloc(1, 1);
	out[len] = 0;
	if (len && out[len - 1] == '\n')
		out[len - 1] = 0;
	return out;
}

/* @json parses, and FILTER on it prints @want. */
#define EXPECT_JQ(json, filter, want)                                                              \
	do {                                                                                       \
		char *got_ = jq((json), (filter));                                                 \
		t_check(got_ != NULL, __FILE__, __LINE__, "jq -e '%s' rejected: %.200s", (filter), (json)); \
		if (got_)                                                                          \
			EXPECT_EQ_STR(got_, (want));                                               \
		free(got_);                                                                        \
	} while (0)

/* Well-formed UTF-8, as glibc's decoder judges it (an implementation independent of json.c's). */
static bool valid_utf8(const char *s)
{
	bool ok;

	if (!setlocale(LC_CTYPE, "C.UTF-8"))
		return t_check(false, __FILE__, __LINE__, "no C.UTF-8 locale");
	ok = mbstowcs(NULL, s, 0) != (size_t)-1;
	setlocale(LC_CTYPE, "C");
	return ok;
}

TEST(jq_is_installed)
{
	char *v = jq("{}", ".");

	t_check(v != NULL, __FILE__, __LINE__, "jq not found or broken; run scripts/setup.sh");
	EXPECT_EQ_STR(v, "{}");
	free(v);
}

TEST(empty_containers)
{
	struct mem m;
	struct ks_json *j;

	j = json_open(&m);
	ks_json_obj_begin(j);
	ks_json_key(j, "o");
	ks_json_obj_begin(j);
	ks_json_obj_end(j);
	ks_json_key(j, "a");
	ks_json_arr_begin(j);
	ks_json_arr_end(j);
	ks_json_obj_end(j);
	EXPECT_EQ_STR(json_close(&m, j), "{\"o\":{},\"a\":[]}");
	EXPECT_JQ(m.buf, ".", "{\"o\":{},\"a\":[]}");
	free(m.buf);
}

TEST(nested_values)
{
	static const char want[] = "{\"n\":1,\"list\":[1,-2,[3,4],{\"x\":\"y\",\"z\":[]},true,false,null,0.25],"
				   "\"big\":18446744073709551615,\"min\":-9223372036854775808,\"t\":true,"
				   "\"inner\":{\"deep\":{\"er\":[[]]}},\"last\":\"\"}";
	struct mem m;
	struct ks_json *j;

	j = json_open(&m);
	ks_json_obj_begin(j);
	ks_json_kv_u64(j, "n", 1);
	ks_json_key(j, "list");
	ks_json_arr_begin(j);
	ks_json_u64(j, 1);
	ks_json_i64(j, -2);
	ks_json_arr_begin(j);
	ks_json_u64(j, 3);
	ks_json_u64(j, 4);
	ks_json_arr_end(j);
	ks_json_obj_begin(j);
	ks_json_kv_str(j, "x", "y");
	ks_json_key(j, "z");
	ks_json_arr_begin(j);
	ks_json_arr_end(j);
	ks_json_obj_end(j);
	ks_json_bool(j, true);
	ks_json_bool(j, false);
	ks_json_null(j);
	ks_json_double(j, 0.25);
	ks_json_arr_end(j);
	ks_json_kv_u64(j, "big", UINT64_MAX);
	ks_json_key(j, "min");
	ks_json_i64(j, INT64_MIN);
	ks_json_key(j, "t");
	ks_json_bool(j, true);
	ks_json_key(j, "inner");
	ks_json_obj_begin(j);
	ks_json_key(j, "deep");
	ks_json_obj_begin(j);
	ks_json_key(j, "er");
	ks_json_arr_begin(j);
	ks_json_arr_begin(j);
	ks_json_arr_end(j);
	ks_json_arr_end(j);
	ks_json_obj_end(j);
	ks_json_obj_end(j);
	ks_json_kv_str(j, "last", NULL); /* NULL is the empty string */
	ks_json_obj_end(j);
	EXPECT_EQ_STR(json_close(&m, j), want);
	EXPECT_JQ(m.buf, ".list[3].x, .inner.deep.er, (.list | length)", "\"y\"\n[[]]\n8");
	/* jq reads numbers as doubles, so compare the big ones as text */
	EXPECT_TRUE(strstr(m.buf, "18446744073709551615") != NULL);
	free(m.buf);
}

TEST(nesting_to_the_limit)
{
	struct mem m;
	struct ks_json *j;
	char want[128] = "";

	/* 31 levels of arrays, each with one element before the next level */
	j = json_open(&m);
	for (int i = 0; i < 31; i++) {
		ks_json_arr_begin(j);
		ks_json_u64(j, (uint64_t)i % 10);
		strcat(want, "[");
		want[strlen(want)] = (char)('0' + i % 10);
		strcat(want, ",");
	}
	want[strlen(want) - 1] = 0;
	for (int i = 0; i < 31; i++) {
		ks_json_arr_end(j);
		strcat(want, "]");
	}
	EXPECT_EQ_STR(json_close(&m, j), want);
	EXPECT_JQ(m.buf, "[.. | arrays] | length", "31");
	free(m.buf);
}

/* One string through the writer, as a JSON document of its own. */
static char *json_string(const char *s)
{
	struct mem m;
	struct ks_json *j = json_open(&m);

	ks_json_str(j, s);
	return json_close(&m, j);
}

TEST(string_escaping)
{
	static const struct { const char *in, *want; } cases[] = {
		{ "plain", "\"plain\"" },
		{ "", "\"\"" },
		{ "a\"b", "\"a\\\"b\"" },
		{ "back\\slash", "\"back\\\\\\\\slash\"" }, /* the sanitizer doubles it, JSON again */
		{ "\\\"", "\"\\\\\\\\\\\"\"" },
		{ "nl\ncr\rtab\t", "\"nl\\\\x0acr\\\\x0dtab\\\\x09\"" }, /* control bytes as the sanitizer's \xNN */
		{ "\x01\x02\x1f", "\"\\\\x01\\\\x02\\\\x1f\"" },
		{ "\b\f", "\"\\\\x08\\\\x0c\"" },
		{ "del\x7f/slash", "\"del\\\\x7f/slash\"" }, /* '/' needs no escape; DEL is escaped for terminals */
		{ "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5", "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5\"" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = json_string(cases[i].in);

		EXPECT_EQ_STR(got, cases[i].want);
		/* and jq reads it as a string of as many characters as went in */
		EXPECT_JQ(got, "type", "\"string\"");
		free(got);
	}
	/* keys are escaped like values */
	{
		struct mem m;
		struct ks_json *j;

		j = json_open(&m);
		ks_json_obj_begin(j);
		ks_json_kv_str(j, "k\"\\\n", "v");
		ks_json_obj_end(j);
		EXPECT_EQ_STR(json_close(&m, j), "{\"k\\\"\\\\\\\\\\\\x0a\":\"v\"}");
		EXPECT_JQ(m.buf, "keys[0] | explode", "[107,34,92,92,92,120,48,97]");
		free(m.buf);
	}
}

TEST(control_chars_escaped)
{
	char in[2] = { 0 }, want[16];

	/* every control character as the sanitizer's \xNN text, which jq reads as that text */
	for (int i = 1; i < 32; i++) {
		char *got;

		in[0] = (char)i;
		got = json_string(in);
		snprintf(want, sizeof(want), "\"\\\\x%02x\"", i);
		EXPECT_EQ_STR(got, want);
		for (const char *p = got; *p; p++)
			EXPECT_TRUE((unsigned char)*p >= 0x20);
		free(got);
	}
}

TEST(invalid_utf8_escaped)
{
	static const struct { const char *in, *want; } cases[] = {
		{ "\xff", "\"\\\\xff\"" },
		{ "ab\xc3", "\"ab\\\\xc3\"" },			/* cut after the lead byte */
		{ "\xe2\x82", "\"\\\\xe2\\\\x82\"" },		/* cut inside a 3-byte sequence */
		{ "\xc0\xaf", "\"\\\\xc0\\\\xaf\"" },		/* overlong '/' */
		{ "\xed\xa0\x80", "\"\\\\xed\\\\xa0\\\\x80\"" }, /* a UTF-16 surrogate */
		{ "\xf4\x90\x80\x80", "\"\\\\xf4\\\\x90\\\\x80\\\\x80\"" }, /* past U+10FFFF */
		{ "\x80x\xc3\xa9", "\"\\\\x80x\xc3\xa9\"" }, /* a stray continuation byte, then a good one */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = json_string(cases[i].in);

		EXPECT_EQ_STR(got, cases[i].want);
		EXPECT_TRUE(valid_utf8(got));
		free(got);
	}
}

TEST(doubles)
{
	static const struct { double v; const char *want; } cases[] = {
		{ 0, "0" }, { 0.1, "0.1" }, { 2.5, "2.5" }, { -1.25, "-1.25" }, { 1e20, "1e+20" },
		{ 2081205.5, "2081205.5" }, { 2.000123456789, "2.000123456789" }, { 1.0 / 3, "0.3333333333333333" },
		{ NAN, "null" }, { INFINITY, "null" }, { -INFINITY, "null" },
	};
	struct mem m;
	struct ks_json *j;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		j = json_open(&m);
		ks_json_arr_begin(j);
		ks_json_double(j, cases[i].v);
		ks_json_arr_end(j);
		json_close(&m, j);
		if (EXPECT_TRUE(m.len > 2)) {
			m.buf[m.len - 1] = 0;
			EXPECT_EQ_STR(m.buf + 1, cases[i].want);
			m.buf[m.len - 1] = ']';
			/* a finite double reads back as itself */
			if (isfinite(cases[i].v))
				EXPECT_TRUE(strtod(m.buf + 1, NULL) == cases[i].v);
			EXPECT_JQ(m.buf, "length", "1");
		}
		free(m.buf);
	}
	/* non-finite values inside an object stay valid JSON */
	j = json_open(&m);
	ks_json_obj_begin(j);
	ks_json_kv_double(j, "nan", NAN);
	ks_json_kv_double(j, "inf", -INFINITY);
	ks_json_kv_double(j, "ok", 1.5);
	ks_json_obj_end(j);
	EXPECT_EQ_STR(json_close(&m, j), "{\"nan\":null,\"inf\":null,\"ok\":1.5}");
	EXPECT_JQ(m.buf, ".nan == null and .inf == null", "true");
	free(m.buf);
}

TEST(number_text)
{
	static const struct { const char *in; bool num; } cases[] = {
		{ "0", true }, { "7", true }, { "-3", true }, { "0.3", true }, { "-0.25", true }, { "1048576", true },
		{ "9007199254740992", true }, { "9007199254740993", false }, { "1796654737082289657", false },
		{ "12345678901234567.5", true }, { "", false }, { "-", false }, { "01", false }, { "1.", false },
		{ ".5", false }, { "1e5", false }, { "+1", false }, { " 1", false }, { "1 ", false }, { "0x10", false },
		{ "6.18.0", false }, { "0-3", false }, { "1,2", false }, { "yes", false }, { "nan", false },
	};
	struct mem m;
	struct ks_json *j;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		EXPECT_TRUE(ks_json_is_number_text(cases[i].in) == cases[i].num);
		j = json_open(&m);
		ks_json_arr_begin(j);
		ks_json_str_or_number(j, cases[i].in);
		ks_json_arr_end(j);
		json_close(&m, j);
		/* a number is written as it is, else a string: either way valid JSON of that type */
		EXPECT_JQ(m.buf, ".[0] | type", cases[i].num ? "\"number\"" : "\"string\"");
		free(m.buf);
	}
}

TEST(fmt_ns)
{
	static const struct { uint64_t ns; const char *want; } cases[] = {
		{ 0, "0ns" }, { 999, "999ns" }, { 1000, "1us" }, { 1234, "1.23us" }, { 999499, "999us" },
		{ 999500, "1ms" }, { 999999, "1ms" }, { 1500000, "1.5ms" }, { 999499999, "999ms" },
		{ 999999999, "1s" }, { 1500000000, "1.5s" }, { 999499999999ull, "999s" },
		{ 999500000000ull, "1000s" }, { 10000000000000ull, "10000s" }, { UINT64_MAX, "18446744074s" },
	};
	char b[32];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		EXPECT_EQ_STR(ks_fmt_ns(cases[i].ns, b, sizeof(b)), cases[i].want);
}

/*
 * The fixture: what a syscalls run might hand to the writers, with a
 * histogram in microseconds, one in nanoseconds, a row without one,
 * a breakdown, filters, loss counters and more rows than -n shows.
 */
/* A syscalls-like row; @ns (n values) fills its histogram when n > 0. */
static struct ks_row *add_row(struct ks_report *r, const char *name, int nr, uint64_t count, uint64_t errors,
			      uint64_t total, const uint64_t *ns, size_t n)
{
	struct ks_row *w = ks_report_add_row(r);

	if (!w)
		exit(2);
	ks_row_key_str(w, "syscall", name);
	ks_row_key_num(w, "nr", nr);
	ks_row_val(w, "count", KS_VAL_COUNT, count);
	ks_row_val(w, "errors", KS_VAL_COUNT, errors);
	ks_row_val(w, "total_ns", KS_VAL_NS, total); /* text shows it as "total" */
	w->sort = total;
	if (n) {
		w->hist = calloc(1, sizeof(*w->hist));
		if (!w->hist)
			exit(2);
		for (size_t i = 0; i < n; i++)
			ks_hist_record(w->hist, ns[i]);
	}
	return w;
}

static void fixture(struct ks_report *r)
{
	static const uint64_t read_ns[] = { 100, 200, 300, 40000, 1000000 };
	static const uint64_t close_ns[] = { 1, 2, 3, 3, 40, 5000 };
	struct ks_row *w;

	ks_report_init(r, "syscalls", "tp_btf");
	r->sub_name = "errnos";
	r->duration_s = 2.5;
	r->top_n = 3;
	ks_report_meta_num(r, "pid", 1234);
	ks_report_meta_str(r, "comm", "a\"b");
	ks_report_lost(r, "map_full", 3);
	ks_report_lost(r, "ringbuf", 0);

	/* added out of order: the writers show what ks_report_sort made of it */
	add_row(r, "zzz", 9, 1, 0, 5049, NULL, 0); /* ties with close, sorts after it by key: -n 3 leaves it out */
	w = add_row(r, "close", 3, 6, 6, 5049, close_ns, 6);
	ks_row_sub_add(w, "EBADF", 6);
	add_row(r, "a_very_long_syscall_name_cut", -1, 1, 0, 999999, NULL, 0);
	w = add_row(r, "read", 0, 5, 2, 1040600, read_ns, 5);
	ks_row_sub_add(w, "EAGAIN", 1);
	ks_row_sub_add(w, "EINTR", 1);
	ks_report_sort(r);
}

static const char fixture_text[] =
	"syscall                    nr      count     errors      total       p50       p90       p99       max  errnos\n"
	/* one unit per column, chosen from its largest value */
	"read                        0          5          2     1.04ms     295ns    1.00ms    1.00ms    1.00ms  EAGAIN=1,EINTR=1\n"
	"a_very_long_syscall_       -1          1          0     1.00ms         -         -         -         -\n"
	"close                       3          6          6   0.0050ms       3ns  0.0050ms  0.0050ms  0.0050ms  EBADF=6\n"
	"(1 more rows; -n 0 shows all)\n"
	"\n"
	/* the histogram header in the table's units: p50..max in their columns', p99.9 and mean in max's */
	"syscall=read nr=0\n"
	"  p50 295ns  p90 1.00ms  p99 1.00ms  p99.9 1.00ms  max 1.00ms  mean 0.21ms  count 5\n"
	"               usecs : count      distribution\n"
	"              0 -> 0 : 3         |****************************************|\n"
	"              1 -> 1 : 0         |                                        |\n"
	"              2 -> 3 : 0         |                                        |\n"
	"              4 -> 7 : 0         |                                        |\n"
	"             8 -> 15 : 0         |                                        |\n"
	"            16 -> 31 : 0         |                                        |\n"
	"            32 -> 63 : 1         |*************                           |\n"
	"           64 -> 127 : 0         |                                        |\n"
	"          128 -> 255 : 0         |                                        |\n"
	"          256 -> 511 : 0         |                                        |\n"
	"         512 -> 1023 : 1         |*************                           |\n"
	"\n"
	"syscall=close nr=3\n"
	"  p50 3ns  p90 0.0050ms  p99 0.0050ms  p99.9 0.0050ms  max 0.0050ms  mean 0.00084ms  count 6\n"
	"               nsecs : count      distribution\n"
	"              1 -> 1 : 1         |*************                           |\n"
	"              2 -> 3 : 3         |****************************************|\n"
	"              4 -> 7 : 0         |                                        |\n"
	"             8 -> 15 : 0         |                                        |\n"
	"            16 -> 31 : 0         |                                        |\n"
	"            32 -> 63 : 1         |*************                           |\n"
	"           64 -> 127 : 0         |                                        |\n"
	"          128 -> 255 : 0         |                                        |\n"
	"          256 -> 511 : 0         |                                        |\n"
	"         512 -> 1023 : 0         |                                        |\n"
	"        1024 -> 2047 : 0         |                                        |\n"
	"        2048 -> 4095 : 0         |                                        |\n"
	"        4096 -> 8191 : 1         |*************                           |\n"
	"lost: 3 (map_full 3, ringbuf 0)\n";

TEST(report_text_fixture)
{
	struct ks_report r;
	struct mem m;

	fixture(&r);
	mem_open(&m);
	EXPECT_EQ_INT(ks_write_text(&r, m.f), 0);
	EXPECT_EQ_STR(mem_close(&m), fixture_text);
	free(m.buf);
	ks_report_free(&r);
}

TEST(report_text_interval_and_empty)
{
	struct ks_report r;
	struct mem m;

	ks_report_init(&r, "syscalls", "raw_tp");
	r.interval = 2;
	r.duration_s = 1.04;
	mem_open(&m);
	EXPECT_EQ_INT(ks_write_text(&r, m.f), 0);
	EXPECT_EQ_STR(mem_close(&m), "--- interval 2 (1.0s) ---\nno events\nlost: 0\n");
	free(m.buf);
	/* without the drawn histograms, and with -n 0 showing every row */
	fixture(&r);
	r.hist_text = false;
	r.top_n = 0;
	mem_open(&m);
	EXPECT_EQ_INT(ks_write_text(&r, m.f), 0);
	mem_close(&m);
	EXPECT_TRUE(strstr(m.buf, "\nzzz                         9          1          0   0.0050ms         -         -"
				  "         -         -\nlost: 3 (map_full 3, ringbuf 0)\n") != NULL);
	EXPECT_TRUE(!strstr(m.buf, "distribution") && !strstr(m.buf, "more rows"));
	free(m.buf);
	ks_report_free(&r);
}

static const char fixture_json[] =
	"{\"collector\":\"syscalls\",\"hook\":\"tp_btf\",\"interval\":0,\"duration_s\":2.5,\"lost\":3,"
	"\"lost_by\":{\"map_full\":3,\"ringbuf\":0},\"counters\":{},\"filters\":{\"pid\":1234,\"comm\":\"a\\\"b\"},\"total_rows\":4,"
	"\"rows\":["
	"{\"syscall\":\"read\",\"nr\":0,\"count\":5,\"errors\":2,\"total_ns\":1040600,\"errnos\":{\"EAGAIN\":1,\"EINTR\":1},"
	"\"latency_ns\":{\"unit\":\"ns\",\"count\":5,\"p50\":295,\"p90\":1000000,\"p99\":1000000,\"p999\":1000000,\"max\":1000000,"
	"\"mean\":208120,\"sum\":1040600,\"buckets\":[[100,103,1],[200,207,1],[288,303,1],[38912,40959,1],"
	"[983040,1015807,1]]}},"
	"{\"syscall\":\"a_very_long_syscall_name_cut\",\"nr\":-1,\"count\":1,\"errors\":0,\"total_ns\":999999,"
	"\"errnos\":{}},"
	"{\"syscall\":\"close\",\"nr\":3,\"count\":6,\"errors\":6,\"total_ns\":5049,\"errnos\":{\"EBADF\":6},"
	"\"latency_ns\":{\"unit\":\"ns\",\"count\":6,\"p50\":3,\"p90\":5000,\"p99\":5000,\"p999\":5000,\"max\":5000,\"mean\":841.5,"
	"\"sum\":5049,\"buckets\":[[1,1,1],[2,2,1],[3,3,2],[40,41,1],[4864,5119,1]]}}"
	"]}\n";

/* A second histogram's header line in one unit, its max's (biolat's size_bytes read "p50 4.12KiB ... max 1.02e+03KiB") */
TEST(report_text_xhist_one_unit)
{
	static const uint64_t ns[] = { 1000 };
	struct ks_report r;
	struct ks_hist *h;
	struct ks_row *w;
	struct mem m;
	char b[32];

	ks_report_init(&r, "biolat", "tp_btf");
	w = add_row(&r, "vda", 0, 3, 0, 1000, ns, 1);
	h = calloc(1, sizeof(*h));
	if (!h)
		exit(2);
	ks_hist_record(h, 4096);
	ks_hist_record(h, 4096);
	ks_hist_record(h, 1047552); /* 1023 KiB */
	EXPECT_EQ_INT(ks_row_xhist(w, "size_bytes", KS_UNIT_BYTES, h), 0);
	mem_open(&m);
	EXPECT_EQ_INT(ks_write_text(&r, m.f), 0);
	mem_close(&m);
	EXPECT_TRUE(strstr(m.buf, "  size_bytes: p50 4.12KiB  p90 1023KiB  p99 1023KiB  p99.9 1023KiB  max 1023KiB  "
				  "mean 344KiB  count 3\n") != NULL);
	EXPECT_TRUE(!strstr(m.buf, "e+0"));
	free(m.buf);
	ks_report_free(&r);
	/* a value alone: the unit after rounding to three digits */
	EXPECT_EQ_STR(ks_fmt_unit(KS_UNIT_BYTES, 1047552, b, sizeof(b)), "0.999MiB");
	EXPECT_EQ_STR(ks_fmt_unit(KS_UNIT_BYTES, 1022976, b, sizeof(b)), "999KiB");
	EXPECT_EQ_STR(ks_fmt_unit(KS_UNIT_BYTES, 4096, b, sizeof(b)), "4KiB");
}

TEST(report_json_fixture)
{
	struct ks_report r;
	struct mem m;

	fixture(&r);
	mem_open(&m);
	EXPECT_EQ_INT(ks_write_json(&r, m.f), 0);
	EXPECT_EQ_STR(mem_close(&m), fixture_json);
	/* one line, and what a user's jq sees */
	EXPECT_EQ_INT(t_count_lines(m.buf), 1);
	EXPECT_JQ(m.buf, "[.rows[].syscall]", "[\"read\",\"a_very_long_syscall_name_cut\",\"close\"]");
	EXPECT_JQ(m.buf, ".rows[0].latency_ns | [.count, (.buckets | map(.[2]) | add)]", "[5,5]");
	EXPECT_JQ(m.buf, ".filters.comm, .lost_by.map_full, .rows[2].errnos.EBADF", "\"a\\\"b\"\n3\n6");
	free(m.buf);
	ks_report_free(&r);
}

TEST(report_json_empty_and_special)
{
	struct ks_report r;
	struct mem m;
	struct ks_row *w;

	ks_report_init(&r, "x\ty", NULL);
	r.interval = 3;
	r.duration_s = NAN;
	mem_open(&m);
	EXPECT_EQ_INT(ks_write_json(&r, m.f), 0);
	EXPECT_EQ_STR(mem_close(&m), "{\"collector\":\"x\\\\x09y\",\"hook\":\"\",\"interval\":3,\"duration_s\":null,"
				     "\"lost\":0,\"lost_by\":{},\"counters\":{},\"filters\":{},\"total_rows\":0,\"rows\":[]}\n");
	EXPECT_JQ(m.buf, ".rows | length", "0");
	free(m.buf);
	/* a key cut from a comm in the middle of a character */
	w = ks_report_add_row(&r);
	ASSERT_TRUE(w != NULL);
	ks_row_key_str(w, "comm", "\xd0\xb1\xd0\xb1\xd0\xb1\xd0\xb1\xd0\xb1\xd0\xb1\xd0\xb1\xd0");
	mem_open(&m);
	EXPECT_EQ_INT(ks_write_json(&r, m.f), 0);
	mem_close(&m);
	EXPECT_TRUE(valid_utf8(m.buf));
	EXPECT_JQ(m.buf, ".rows[0].comm", "\"\xd0\xb1\xd0\xb1\xd0\xb1\xd0\xb1\xd0\xb1\xd0\xb1\xd0\xb1\\\\xd0\"");
	free(m.buf);
	ks_report_free(&r);
}

/* A full disk loses the report: both writers must say so with the real errno (ENOSPC, not EIO). */
TEST(write_errors_reported)
{
	struct ks_report r;
	FILE *f;

	fixture(&r);
	f = fopen("/dev/full", "w");
	ASSERT_TRUE(f != NULL);
	EXPECT_EQ_INT(ks_write_text(&r, f), -ENOSPC);
	fclose(f);
	f = fopen("/dev/full", "w");
	ASSERT_TRUE(f != NULL);
	EXPECT_EQ_INT(ks_write_json(&r, f), -ENOSPC);
	fclose(f);
	/* the same with a report small enough to sit in the stdio buffer until the end */
	ks_report_free(&r);
	ks_report_init(&r, "syscalls", "tp_btf");
	f = fopen("/dev/full", "w");
	ASSERT_TRUE(f != NULL);
	EXPECT_EQ_INT(ks_write_text(&r, f), -ENOSPC);
	EXPECT_EQ_INT(ks_write_json(&r, f), -ENOSPC);
	fclose(f);
	ks_report_free(&r);
}
