/* Unit tests of format/anon.c: SipHash-2-4 against the paper's vectors, and tokens that are stable, keyed and fit a comm. */
#include "test.h"
#include "events/anon.h"
#include "events/filter.h"

/* key 00 01 .. 0f; Aumasson and Bernstein, "SipHash: a fast short-input PRF", appendix A */
TEST(siphash_reference_vectors)
{
	uint64_t k0 = 0x0706050403020100ull, k1 = 0x0f0e0d0c0b0a0908ull;
	unsigned char m[15];

	for (int i = 0; i < 15; i++)
		m[i] = (unsigned char)i;
	EXPECT_EQ_U64(ks_siphash(k0, k1, m, 15), 0xa129ca6149be45e5ull);
	EXPECT_EQ_U64(ks_siphash(k0, k1, m, 0), 0x726fdb47dd0e0e31ull);
}

TEST(tokens_stable_keyed_and_sized)
{
	struct ks_anon a, b, r;
	char t1[32], t2[32], t3[32], t4[32], c[16];

	ASSERT_EQ_INT(ks_anon_init(&a, "key one"), 0);
	ASSERT_EQ_INT(ks_anon_init(&b, "key two"), 0);
	ASSERT_EQ_INT(ks_anon_init(&r, NULL), 0);
	ks_anon_token(&a, 'p', "/home/alice/x", 13, t1, sizeof(t1));
	ks_anon_token(&a, 'p', "/home/alice/x", 13, t2, sizeof(t2));
	ks_anon_token(&b, 'p', "/home/alice/x", 13, t3, sizeof(t3));
	ks_anon_token(&a, 'c', "/home/alice/x", 13, t4, sizeof(t4));
	EXPECT_EQ_STR(t1, t2);
	EXPECT_TRUE(strcmp(t1, t3) != 0);
	EXPECT_TRUE(strcmp(t1, t4) != 0); /* the kind is part of the input */
	EXPECT_TRUE(!strncmp(t1, "path-", 5) && strlen(t1) == 21);
	/* a comm token is whole in a comm (15 characters and the NUL) */
	ks_anon_token(&r, 'c', "sshd", 4, c, sizeof(c));
	EXPECT_TRUE(!strncmp(c, "c-", 2) && strlen(c) == 14);
	ks_anon_free(&a);
	ks_anon_free(&b);
	ks_anon_free(&r);
}

struct kv_lines {
	char text[4096];
	size_t len;
	char args[24][256];
	int nargs;
	char filter[256], trigger[256], comm[32];
};

static void collect(void *ctx, const char *key, const char *val)
{
	struct kv_lines *l = ctx;

	l->len += (size_t)snprintf(l->text + l->len, sizeof(l->text) - l->len, "%s=%s\n", key, val);
	if (!strcmp(key, "arg") && l->nargs < 24)
		snprintf(l->args[l->nargs++], sizeof(l->args[0]), "%s", val);
	else if (!strcmp(key, "filter"))
		snprintf(l->filter, sizeof(l->filter), "%s", val);
	else if (!strcmp(key, "flight.trigger"))
		snprintf(l->trigger, sizeof(l->trigger), "%s", val);
	else if (!strcmp(key, "filter.comm"))
		snprintf(l->comm, sizeof(l->comm), "%s", val);
}

/*
 * The manifest of `record --anonymize`: strings in --filter/--trigger
 * expressions become the tokens the events give (a comm field's value, the
 * comm's token), the expressions still parse, a --trigger-latency spec is
 * kept (it names events and fields; a path token broke rerun), the key of
 * --anonymize-key is not kept, and 'cmdline' is built from the anonymized
 * arguments.
 */
TEST(manifest_expressions_and_specs)
{
	static const char *const argv[] = {
		"-e", "sched:sched_switch", "--filter", "prev_comm == \"SECRET\" && next_pid != 0",
		"--trigger=comm ~ \"a\\\"SECRET*\"", "--trigger-latency",
		"raw_syscalls:sys_enter/raw_syscalls:sys_exit common_pid>20ms", "--filt", "next_comm != \"SECRET\"",
		"--comm", "SECRET", "--anonymize-key", "SECRETKEY", "-o", "/home/SECRET/x.ksr", "--anonymize", "-d", "0.3",
	};
	const int argc = (int)(sizeof(argv) / sizeof(argv[0]));
	struct ks_rec_kv in = { 0 }, out = { 0 };
	static struct kv_lines l;
	struct ks_flt_err ferr;
	struct ks_flt_expr *x;
	char ctok[16], gtok[40], want[256];
	struct ks_anon a;

	ASSERT_EQ_INT(ks_anon_init(&a, "k"), 0);
	ks_rec_kv_add(&in, "host", "%s", "SECRETHOST");
	ks_rec_kv_add(&in, "cmdline", "%s", "ksight record -e sched:sched_switch --filter 'prev_comm == \"SECRET\"'");
	for (int i = 0; i < argc; i++)
		ks_rec_kv_add(&in, "arg", "%s", argv[i]);
	ks_rec_kv_add(&in, "filter.comm", "%s", "SECRET");
	ks_rec_kv_add(&in, "filter", "%s", argv[3]);
	ks_rec_kv_add(&in, "flight.trigger", "%s", "comm ~ \"a\\\"SECRET*\"");
	ASSERT_EQ_INT(in.err, 0);
	ks_anon_manifest(&a, in.buf, in.len, &out);
	ASSERT_EQ_INT(out.err, 0);
	ks_rec_kv_each(out.buf, out.len, collect, &l);
	EXPECT_TRUE(!memmem(out.buf, out.len, "SECRET", 6));
	ASSERT_EQ_INT(l.nargs, argc);
	ks_anon_token(&a, 'c', "SECRET", 6, ctok, sizeof(ctok));
	snprintf(want, sizeof(want), "prev_comm == \"%s\" && next_pid != 0", ctok);
	EXPECT_EQ_STR(l.args[3], want);
	EXPECT_EQ_STR(l.filter, want);
	/* the escape resolved before hashing, as the filter compiler reads the string */
	ks_anon_token(&a, 'c', "a\"SECRET*", 9, gtok, 16);
	snprintf(want, sizeof(want), "--trigger=comm ~ \"%s\"", gtok);
	EXPECT_EQ_STR(l.args[4], want);
	EXPECT_EQ_STR(l.trigger, want + strlen("--trigger="));
	EXPECT_EQ_STR(l.args[6], argv[6]);
	snprintf(want, sizeof(want), "next_comm != \"%s\"", ctok);
	EXPECT_EQ_STR(l.args[8], want); /* --filt: getopt_long's abbreviation */
	EXPECT_EQ_STR(l.args[10], ctok);
	EXPECT_EQ_STR(l.comm, ctok);
	EXPECT_TRUE(!strncmp(l.args[12], "arg-", 4));
	EXPECT_TRUE(!strncmp(l.args[14], "path-", 5));
	/* --anonymize takes no value, though it begins --anonymize-key */
	EXPECT_EQ_STR(l.args[17], "0.3");
	for (int i = 3; i <= 8; i += 5) {
		x = ks_flt_parse(l.args[i], &ferr);
		EXPECT_TRUE(x != NULL);
		ks_flt_expr_free(x);
	}
	snprintf(want, sizeof(want), "cmdline=ksight record -e sched:sched_switch --filter 'prev_comm == \"%s\" && next_pid != 0' '--trigger=comm ~ \"%s\"' --trigger-latency '%s' --filt",
		 ctok, gtok, argv[6]);
	EXPECT_TRUE(strstr(l.text, want) != NULL);
	ks_rec_kv_free(&in);
	ks_rec_kv_free(&out);
	ks_anon_free(&a);
}
