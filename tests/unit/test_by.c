/* Unit tests of the one --by table (ks_by_parse, ks_by_format) and of every collector's words in it. */
#include "test.h"
#include "core/collector.h"
#include "core/log.h"
#include "core/opts.h"
#include "ksight/biolat.h"
#include "ksight/sched.h"
#include "ksight/syscalls.h"

enum { V_A = 3, V_B = 7, V_AB = 9, V_NONE = 0 };

static const struct ks_by_word words[] = {
	{ "a", V_A },
	{ "b", V_B },
	{ "a,b", V_AB },
	{ NULL, V_NONE },
};

TEST(parse_words_default_and_unknown)
{
	EXPECT_EQ_INT(ks_by_parse(words, "a"), V_A);
	EXPECT_EQ_INT(ks_by_parse(words, "b"), V_B);
	/* a combined key is one word: its own row layout */
	EXPECT_EQ_INT(ks_by_parse(words, "a,b"), V_AB);
	/* no --by: the terminator's value, which need not be a word */
	EXPECT_EQ_INT(ks_by_parse(words, NULL), V_NONE);
	/* whole words only, case and all */
	EXPECT_EQ_INT(ks_by_parse(words, ""), -EINVAL);
	EXPECT_EQ_INT(ks_by_parse(words, "A"), -EINVAL);
	EXPECT_EQ_INT(ks_by_parse(words, "a,"), -EINVAL);
	EXPECT_EQ_INT(ks_by_parse(words, "b,a"), -EINVAL);
	EXPECT_EQ_INT(ks_by_parse(words, "ab"), -EINVAL);
}

TEST(format_joins_and_truncates)
{
	static const struct ks_by_word none[] = { { NULL, 1 } };
	char buf[64], small[4];

	EXPECT_EQ_STR(ks_by_format(words, buf, sizeof(buf)), "a|b|a,b");
	EXPECT_EQ_STR(ks_by_format(none, buf, sizeof(buf)), "");
	/* snprintf's truncation: never past the buffer, always terminated */
	EXPECT_EQ_STR(ks_by_format(words, small, sizeof(small)), "a|b");
}

/* Parses `ksight NAME --by BY` with @col's spec; returns ks_opts_parse's result and keeps stderr quiet. */
static int parse_by(const struct ks_collector *col, const char *by, struct ks_common *c, char **err)
{
	char *argv[] = { (char *)col->spec.name, (char *)"--by", (char *)by, NULL };
	struct t_capture ce;
	int rc;

	ks_common_init(c);
	t_capture_begin(&ce, STDERR_FILENO);
	rc = ks_opts_parse(&col->spec, 3, argv, c, col->parse_opt, NULL);
	*err = t_capture_end(&ce);
	return rc;
}

TEST(every_collector_declares_a_table)
{
	int n = 0;

	for (const struct ks_collector *const *cp = ks_collectors; *cp; cp++) {
		const struct ks_collector *col = *cp;
		const struct ks_by_word *w;
		struct ks_common c;
		char *err;

		/* only funclat, whose rows are its targets, takes no --by */
		if (!(col->spec.common & KS_O_BY)) {
			EXPECT_EQ_STR(col->spec.name, "funclat");
			continue;
		}
		n++;
		/* the table, not the old '|' string: one place for the words */
		if (!EXPECT_TRUE(col->spec.by_words != NULL)) {
			fprintf(stderr, "%s: no by_words\n", col->spec.name);
			continue;
		}
		for (w = col->spec.by_words; w->word; w++) {
			/* each word parses to its own value, through the option parser too */
			EXPECT_EQ_INT(ks_by_parse(col->spec.by_words, w->word), w->value);
			for (const struct ks_by_word *o = col->spec.by_words; o < w; o++) {
				EXPECT_TRUE(strcmp(o->word, w->word) != 0);
				EXPECT_TRUE(o->value != w->value);
			}
			EXPECT_EQ_INT(parse_by(col, w->word, &c, &err), 3);
			EXPECT_EQ_STR(c.by, w->word);
			free(err);
		}
		EXPECT_TRUE(w > col->spec.by_words);
		EXPECT_EQ_INT(parse_by(col, "nosuch", &c, &err), -EINVAL);
		EXPECT_TRUE(strstr(err, "invalid --by key 'nosuch': expected one of ") != NULL);
		free(err);
	}
	EXPECT_TRUE(n >= 8);
}

TEST(collector_values_and_combined_keys)
{
	const struct ks_collector *sc = ks_collector_find("syscalls"), *bl = ks_collector_find("biolat");
	const struct ks_collector *rq = ks_collector_find("runqlat"), *off = ks_collector_find("offcpu");

	ASSERT_TRUE(sc && bl && rq && off);
	EXPECT_EQ_INT(ks_by_parse(sc->spec.by_words, NULL), KS_SC_BY_SYSCALL);
	EXPECT_EQ_INT(ks_by_parse(sc->spec.by_words, "pid,syscall"), KS_SC_BY_PID_SYSCALL);
	EXPECT_EQ_INT(ks_by_parse(sc->spec.by_words, "comm,syscall"), KS_SC_BY_COMM_SYSCALL);
	EXPECT_EQ_INT(ks_by_parse(sc->spec.by_words, "cgroup,syscall"), KS_SC_BY_CGROUP_SYSCALL);
	EXPECT_EQ_INT(ks_by_parse(sc->spec.by_words, "syscall,pid"), -EINVAL);
	EXPECT_EQ_INT(ks_by_parse(bl->spec.by_words, NULL), KS_BL_BY_DISK);
	EXPECT_EQ_INT(ks_by_parse(bl->spec.by_words, "pid,disk"), KS_BL_BY_PID_DISK);
	EXPECT_EQ_INT(ks_by_parse(bl->spec.by_words, "comm,op"), KS_BL_BY_COMM_OP);
	/* the scheduler pair: no --by is one row (NONE); offcpu has no per-CPU key */
	EXPECT_EQ_INT(ks_by_parse(rq->spec.by_words, NULL), KS_SCHED_BY_NONE);
	EXPECT_EQ_INT(ks_by_parse(rq->spec.by_words, "cpu"), KS_SCHED_BY_CPU);
	EXPECT_EQ_INT(ks_by_parse(off->spec.by_words, "cpu"), -EINVAL);
	EXPECT_EQ_INT(ks_by_parse(off->spec.by_words, "cgroup"), KS_SCHED_BY_CGROUP);
}

TEST(help_lists_the_words_in_table_order)
{
	const struct ks_collector *sc = ks_collector_find("syscalls");
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	ASSERT_TRUE(sc && f);
	ks_opts_usage(&sc->spec, f);
	fclose(f);
	EXPECT_TRUE(strstr(out, "KEY: syscall|pid|comm|errno|pid,syscall|comm,syscall|cgroup,syscall\n") != NULL);
	free(out);
}
