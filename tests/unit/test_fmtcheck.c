/* Event formats from a stranger's recording (src/format/fmtcheck.c): genuine ones pass, hostile ones are refused or get an empty print format, and nothing libtraceevent leaks on reaches this process (LeakSanitizer in the san build). */
#include <event-parse.h>
#include <zlib.h>
#include "format/fmtcheck.h"
#include "test.h"

#define COMMONS                                                                                    \
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"                     \
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"                     \
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"             \
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"

/* sched_process_exec of 6.18 with its ID, a field declaration and its print format as given. */
static char *exec_fmt(int id, const char *decl, const char *print)
{
	char *s;

	if (asprintf(&s,
		     "name: sched_process_exec\nID: %d\nformat:\n" COMMONS
		     "\tfield:__data_loc char[] filename;\toffset:8;\tsize:4;\tsigned:0;\n"
		     "\tfield:pid_t pid;\toffset:12;\tsize:4;\tsigned:1;\n"
		     "\tfield:%s;\toffset:16;\tsize:4;\tsigned:1;\n\nprint fmt: %s\n",
		     id, decl, print) < 0)
		abort();
	return s;
}

#define GOOD_PRINT "\"filename=%s pid=%d old_pid=%d\", __get_str(filename), REC->pid, REC->old_pid"

/* Adds @n texts of system "sched" to a fresh handle; the handle is returned for more checks. */
static struct tep_handle *add(char **texts, struct ks_fmt *v, size_t n)
{
	struct tep_handle *tep = tep_alloc();

	for (size_t i = 0; i < n; i++)
		v[i] = (struct ks_fmt){ .sys = "sched", .text = texts[i], .len = strlen(texts[i]) };
	if (!tep || ks_fmt_add_all(tep, v, n))
		abort();
	return tep;
}

TEST(genuine_and_hostile)
{
	char *t[] = {
		exec_fmt(365, "pid_t old_pid", GOOD_PRINT),
		exec_fmt(366, "pid_t old_pid", "\"x=%d\", __print_flags(REC->nosuchfield, \"|\", { 1, \"A\" })"),
		exec_fmt(367, "p\xff\xffid_t old_pid", GOOD_PRINT),	   /* libtraceevent leaks on it */
		exec_fmt(368, "pid]t old_pid", GOOD_PRINT),		   /* and on this */
		exec_fmt(369, "__print_hex(rt old_pid", GOOD_PRINT), /* and this */
		exec_fmt(370, "pid_t old_pid", "\"%d\", REC->pid>-, REC->old_pid"), /* and on this print format */
		exec_fmt(365, "pid_t old_pid", GOOD_PRINT),		   /* a second format for 365 */
	};
	size_t n = sizeof(t) / sizeof(t[0]);
	struct ks_fmt v[sizeof(t) / sizeof(t[0])];
	struct tep_handle *tep = add(t, v, n);

	EXPECT_TRUE(!v[0].refused && !v[0].raw_print && v[0].id == 365);
	EXPECT_TRUE(v[1].refused && strstr(v[1].why, "names no field 'nosuchfield'"));
	EXPECT_TRUE(v[2].refused && strstr(v[2].why, "a byte 0xff"));
	EXPECT_TRUE(v[3].refused && strstr(v[3].why, "a field line not as tracefs writes it"));
	EXPECT_TRUE(v[4].refused && strstr(v[4].why, "a field line not as tracefs writes it"));
	/* kept, its fields printed raw as libtraceevent does for a print format it fails on */
	EXPECT_TRUE(!v[5].refused && v[5].raw_print && tep_find_event(tep, 370));
	EXPECT_TRUE(v[6].refused && strstr(v[6].why, "a second format for event ID 365"));
	EXPECT_EQ_INT(tep_get_events_count(tep), 2);
	tep_free(tep);
	for (size_t i = 0; i < n; i++)
		free(t[i]);
}

/* A format of one field "int x" at @off/@size, with the common fields @commons. */
static char *one_field(int id, const char *commons, const char *off, const char *size)
{
	char *s;

	if (asprintf(&s, "name: e%d\nID: %d\nformat:\n%s\tfield:int x;\toffset:%s;\tsize:%s;\tsigned:1;\n\n"
			 "print fmt: \"%%d\", REC->x\n",
		     id, id, commons, off, size) < 0)
		abort();
	return s;
}

TEST(fields_outside_the_record)
{
	char *t[] = {
		/* offset 4294967295 is -1 to libtraceevent (an unsigned-int bounds check wrapped) */
		one_field(1, COMMONS, "4294967295", "4"),
		/* size 2^31-1: offset + size overflows an int */
		one_field(2, COMMONS, "16", "2147483647"),
		/* common_type at 2^31: libtraceevent reads every record's type there */
		one_field(3, "\tfield:unsigned short common_type;\toffset:2147483648;\tsize:2;\tsigned:0;\n\n", "8", "4"),
		one_field(4, COMMONS, "8", "4"),
		/* common fields other than those of the format accepted before: one format's are read for all */
		one_field(5, "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
			     "\tfield:int common_pid;\toffset:8;\tsize:4;\tsigned:1;\n\n", "12", "4"),
	};
	struct ks_fmt v[5];
	struct tep_handle *tep = add(t, v, 5);

	EXPECT_TRUE(v[0].refused && strstr(v[0].why, "field 'x' (offset -1, size 4) lies outside a record of 4096"));
	EXPECT_TRUE(v[1].refused && strstr(v[1].why, "field 'x' (offset 16, size 2147483647) lies outside"));
	EXPECT_TRUE(v[2].refused && strstr(v[2].why, "field 'common_type' (offset -2147483648, size 2)"));
	EXPECT_TRUE(!v[3].refused && v[3].id == 4);
	EXPECT_TRUE(v[4].refused && strstr(v[4].why, "common fields differ"));
	EXPECT_EQ_INT(tep_get_events_count(tep), 1);
	tep_free(tep);
	for (size_t i = 0; i < 5; i++)
		free(t[i]);
}

TEST(byte_ranges_of_unchecked_length_print_raw)
{
	char *t[] = {
		exec_fmt(1, "pid_t old_pid", "\"%s\", __print_hex(__get_dynamic_array(filename), __get_dynamic_array_len(filename))"),
		exec_fmt(2, "pid_t old_pid", "\"%s\", __print_hex(REC->pid, 100000)"),
		exec_fmt(3, "pid_t old_pid", "\"%s\", __print_hex_str(__get_dynamic_array(filename), REC->pid)"),
		exec_fmt(4, "pid_t old_pid", "\"%s\", __print_array(__get_dynamic_array(filename), 4, 8)"),
	};
	struct ks_fmt v[4];
	struct tep_handle *tep = add(t, v, 4);

	/* a dynamic array's own length is checked against each record; other lengths are not */
	EXPECT_TRUE(!v[0].refused && !v[0].raw_print);
	EXPECT_TRUE(!v[1].refused && v[1].raw_print);
	EXPECT_TRUE(!v[2].refused && v[2].raw_print);
	EXPECT_TRUE(!v[3].refused && v[3].raw_print);
	tep_free(tep);
	for (size_t i = 0; i < 4; i++)
		free(t[i]);
}

/* A report chunk's payload as ks_rec_report_append lays it out: the lines, the lengths, the empty line, both renderings. */
static size_t report_payload(char *buf, size_t cap, const char *head, const char *json, const char *text)
{
	return (size_t)snprintf(buf, cap, "%sjson_len\t%zu\ntext_len\t%zu\n\n%s%s", head, strlen(json), strlen(text), json,
				text);
}

TEST(report_chunks_split_and_checked)
{
	struct ks_rec_report_view v;
	char p[512], why[160];
	size_t n;

	n = report_payload(p, sizeof(p), "collector\tsyscalls\nkind\tinterval\ncost.cpu_us\t12\n", "{\"a\":1}\n", "x\ty\n");
	ASSERT_EQ_INT(ks_rec_report_check(p, n, &v, why, sizeof(why)), 0);
	EXPECT_EQ_STR(v.collector, "syscalls");
	EXPECT_TRUE(!v.total);
	EXPECT_EQ_U64(v.json_len, 8);
	EXPECT_TRUE(!memcmp(v.json, "{\"a\":1}\n", 8));
	EXPECT_EQ_U64(v.text_len, 4);
	EXPECT_TRUE(!memcmp(v.text, "x\ty\n", 4));
	/* the lines end at the empty one: a blank line inside the text is the text's */
	n = report_payload(p, sizeof(p), "collector\trunqlat\nkind\ttotal\n", "{}", "a\n\nb\n");
	ASSERT_EQ_INT(ks_rec_report_check(p, n, &v, why, sizeof(why)), 0);
	EXPECT_TRUE(v.total);
	EXPECT_EQ_U64(v.text_len, 5);
	/* empty renderings are whole */
	n = report_payload(p, sizeof(p), "collector\tbiolat\nkind\ttotal\n", "", "");
	EXPECT_EQ_INT(ks_rec_report_check(p, n, &v, why, sizeof(why)), 0);
}

TEST(report_chunks_hostile_refused_with_why)
{
	static const struct {
		const char *payload, *why;
	} bad[] = {
		{ "collector\tsyscalls\nkind\tinterval\njson_len\t2\ntext_len\t1\n", "no end to its lines" },
		{ "collector\tsyscalls\nkind\tinterval\njson_len\t3\ntext_len\t1\n\n{}x", "lengths do not add up" },
		{ "collector\tsyscalls\nkind\tinterval\njson_len\t2\ntext_len\t0\n\n{}x", "lengths do not add up" },
		{ "collector\tsyscalls\nkind\tinterval\njson_len\t-1\ntext_len\t4\n\n{}x", "lengths do not add up" },
		{ "collector\tsyscalls\nkind\tinterval\njson_len\t18446744073709551615\ntext_len\t4\n\n{}x", "lengths do not add up" },
		{ "collector\tsyscalls\nkind\tinterval\njson_len\t99999999999999999999999\ntext_len\t4\n\n{}x", "lengths do not add up" },
		{ "collector\tsyscalls\nkind\tinterval\njson_len\t2\n\n{}", "lengths do not add up" },
		{ "collector\tsys calls\nkind\tinterval\njson_len\t2\ntext_len\t0\n\n{}", "no collector name" },
		{ "collector\t\nkind\tinterval\njson_len\t2\ntext_len\t0\n\n{}", "no collector name" },
		{ "kind\tinterval\njson_len\t2\ntext_len\t0\n\n{}", "no collector name" },
		{ "collector\tsyscalls\nkind\tweird\njson_len\t2\ntext_len\t0\n\n{}", "neither interval nor total" },
		{ "collector\tsyscalls\nkind\tinterval\njson_len\t2\ntext_len\t3\n\n{}\033[m", "control byte" },
		{ "collector\tsyscalls\nkind\tinterval\njson_len\t2\ntext_len\t0\n\n{\x7f", "control byte" },
		{ "", "no end to its lines" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct ks_rec_report_view v;
		char why[160] = "";

		EXPECT_EQ_INT(ks_rec_report_check(bad[i].payload, strlen(bad[i].payload), &v, why, sizeof(why)), -EBADMSG);
		if (!strstr(why, bad[i].why))
			EXPECT_EQ_STR(why, bad[i].why);
	}
	/* a NUL is a control byte too: the renderings are shown as text */
	EXPECT_EQ_INT(ks_rec_report_check("collector\ts\nkind\ttotal\njson_len\t2\ntext_len\t0\n\n{\0", 48, &(struct ks_rec_report_view){ 0 },
					  (char[160]){ 0 }, 160), -EBADMSG);
}

/* A deflated payload as ks_rec_report_append writes it, with @jl and @tl as declared (NULL: the true ones). */
static size_t deflated(unsigned char *buf, size_t cap, const char *json, const char *text, const char *jl, const char *tl)
{
	char body[256], lens[128];
	uLongf zl = 256;
	unsigned char z[256];
	int n = snprintf(body, sizeof(body), "%s%s", json, text), h;

	if (compress2(z, &zl, (const Bytef *)body, (uLong)n, 6) != Z_OK)
		return 0; /* the caller's checks then fail */
	snprintf(lens, sizeof(lens), "json_len\t%s\ntext_len\t%s\n", jl ? jl : "", tl ? tl : "");
	if (!jl)
		snprintf(lens, sizeof(lens), "json_len\t%zu\ntext_len\t%zu\n", strlen(json), strlen(text));
	h = snprintf((char *)buf, cap, "collector\tsyscalls\nkind\tinterval\n%szlib_len\t%lu\n\n", lens, (unsigned long)zl);
	memcpy(buf + h, z, zl);
	return (size_t)h + zl;
}

TEST(report_chunks_inflated_exactly)
{
	struct ks_rec_report_view v;
	unsigned char p[512];
	char why[160], *plain;
	size_t n, plen = 7;

	n = deflated(p, sizeof(p), "{\"rows\":[]}\n", "none\n", NULL, NULL);
	ASSERT_EQ_INT(ks_rec_report_inflate((char *)p, n, &plain, &plen, why, sizeof(why)), 0);
	ASSERT_TRUE(plain != NULL);
	ASSERT_EQ_INT(ks_rec_report_check(plain, plen, &v, why, sizeof(why)), 0);
	EXPECT_EQ_U64(v.json_len, 12);
	EXPECT_TRUE(!memcmp(v.text, "none\n", 5));
	free(plain);
	/* a plain payload is left to the check, its length untouched */
	plen = 7;
	EXPECT_EQ_INT(ks_rec_report_inflate("collector\ts\n\n", 13, &plain, &plen, why, sizeof(why)), 0);
	EXPECT_TRUE(plain == NULL && plen == 7);
	/* declared sizes that differ from what inflates, or pass the bound: refused, nothing inflated past it */
	n = deflated(p, sizeof(p), "{}", "abc", "2", "4");
	EXPECT_EQ_INT(ks_rec_report_inflate((char *)p, n, &plain, &plen, why, sizeof(why)), -EBADMSG);
	EXPECT_TRUE(strstr(why, "do not inflate") != NULL);
	n = deflated(p, sizeof(p), "{}", "abc", "2", "2");
	EXPECT_EQ_INT(ks_rec_report_inflate((char *)p, n, &plain, &plen, why, sizeof(why)), -EBADMSG);
	n = deflated(p, sizeof(p), "{}", "abc", "2", "1099511627776");
	EXPECT_EQ_INT(ks_rec_report_inflate((char *)p, n, &plain, &plen, why, sizeof(why)), -EBADMSG);
	EXPECT_TRUE(strstr(why, "past 64 MiB") != NULL);
	/* zlib_len other than the bytes that follow */
	n = deflated(p, sizeof(p), "{}", "abc", NULL, NULL);
	EXPECT_EQ_INT(ks_rec_report_inflate((char *)p, n - 1, &plain, &plen, why, sizeof(why)), -EBADMSG);
	EXPECT_TRUE(strstr(why, "do not add up") != NULL);
}
