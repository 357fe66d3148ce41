/* The latency pair matcher (no formats, keys given directly): pairs, restarts, unmatched ends, bounded eviction of the oldest, growth. */
#include <errno.h>
#include <string.h>
#include <event-parse.h>
#include "events/pair.h"
#include "flt_formats.h"
#include "test.h"

static int feed(struct ks_pairer *m, unsigned roles, uint64_t key, uint64_t ts, uint64_t *start)
{
	uint64_t k[KS_PAIR_MAX_KEYS] = { key, 7 };

	return ks_pairer_feed(m, roles, k, k, ts, start);
}

/* The matcher's counts, each checked, then the matcher freed. */
static void counts_free(struct ks_pairer *m, uint64_t unmatched, uint64_t restarted, uint64_t open, uint64_t evicted)
{
	struct ks_pair_counts pc;

	ks_pairer_counts(m, &pc);
	EXPECT_EQ_U64(pc.unmatched, unmatched);
	EXPECT_EQ_U64(pc.restarted, restarted);
	EXPECT_EQ_U64(pc.open, open);
	EXPECT_EQ_U64(pc.evicted, evicted);
	ks_pairer_free(m);
}

TEST(pairs_restarts_unmatched)
{
	struct ks_pairer *m = ks_pairer_new(0);
	uint64_t st = 0;

	ASSERT_TRUE(m);
	EXPECT_EQ_INT(feed(m, KS_PAIR_START, 1, 100, &st), 0);
	EXPECT_EQ_INT(feed(m, KS_PAIR_START, 2, 110, &st), 0);
	EXPECT_EQ_INT(feed(m, KS_PAIR_END, 2, 150, &st), 1);
	EXPECT_EQ_U64(st, 110);
	EXPECT_EQ_INT(feed(m, KS_PAIR_END, 2, 160, &st), 0); /* used up */
	EXPECT_EQ_INT(feed(m, KS_PAIR_START, 1, 170, &st), 0); /* restart: the later one counts */
	EXPECT_EQ_INT(feed(m, KS_PAIR_END, 1, 200, &st), 1);
	EXPECT_EQ_U64(st, 170);
	/* one event both ending and starting (START and END the same event) */
	EXPECT_EQ_INT(feed(m, KS_PAIR_START | KS_PAIR_END, 3, 300, &st), 0);
	EXPECT_EQ_INT(feed(m, KS_PAIR_START | KS_PAIR_END, 3, 350, &st), 1);
	EXPECT_EQ_U64(st, 300);
	counts_free(m, 1, 1, 1, 0); /* open: key 3's start of 350 */
}

/* A bound of 16 open starts: 20 keys open, the 4 oldest give way (counted), the newest 16 still pair. */
TEST(bounded_evicts_the_oldest)
{
	struct ks_pairer *m = ks_pairer_new(16);
	uint64_t st = 0;
	int ended = 0;

	ASSERT_TRUE(m);
	for (uint64_t k = 0; k < 20; k++)
		EXPECT_EQ_INT(feed(m, KS_PAIR_START, k, 1000 + k, &st), 0);
	for (uint64_t k = 0; k < 20; k++)
		if (feed(m, KS_PAIR_END, k, 2000 + k, &st) == 1 && EXPECT_EQ_U64(st, 1000 + k))
			ended++;
	EXPECT_EQ_INT(ended, 16);
	counts_free(m, 4, 0, 0, 4);
}

/* Starts that end make room: a bounded matcher never evicts while fewer than its bound are open. */
TEST(bounded_reuses_ended_room)
{
	struct ks_pairer *m = ks_pairer_new(16);
	uint64_t st = 0;
	int ended = 0;

	ASSERT_TRUE(m);
	/* one key open all along (the ring's head stays live), 100000 others come and go */
	feed(m, KS_PAIR_START, 999999, 1, &st);
	for (uint64_t i = 0; i < 100000; i++) {
		feed(m, KS_PAIR_START, i % 10, 10 + 2 * i, &st);
		ended += feed(m, KS_PAIR_END, i % 10, 11 + 2 * i, &st) == 1;
	}
	ended += feed(m, KS_PAIR_END, 999999, 500000, &st) == 1;
	EXPECT_EQ_U64(st, 1);
	EXPECT_EQ_INT(ended, 100001);
	counts_free(m, 0, 0, 0, 0);
}

/* Unbounded (report): 100000 keys open at once, all found again. */
TEST(unbounded_grows)
{
	struct ks_pairer *m = ks_pairer_new(0);
	uint64_t st = 0;
	int ended = 0;

	ASSERT_TRUE(m);
	for (uint64_t k = 0; k < 100000; k++)
		feed(m, KS_PAIR_START, k, k, &st);
	for (uint64_t k = 0; k < 100000; k++)
		ended += feed(m, KS_PAIR_END, k, k + 5, &st) == 1 && st == k;
	EXPECT_EQ_INT(ended, 100000);
	counts_free(m, 0, 0, 0, 0);
}

/* The keys' fields: as written, or sched_switch's prev_/next_ twin of a plain name (the issue's `key=pid`). */
TEST(key_fields_and_switch_twins)
{
	struct tep_handle *tep = tep_alloc();
	struct ks_pair p;

	ASSERT_TRUE(tep);
	ASSERT_TRUE(!tep_parse_event(tep, fmt_wakeup, strlen(fmt_wakeup), "sched") &&
		    !tep_parse_event(tep, fmt_switch, strlen(fmt_switch), "sched"));
	/* run-queue latency: the woken task is the one switched in */
	EXPECT_EQ_INT(ks_pair_parse_tep(&p, tep, "sched:sched_wakeup/sched:sched_switch", "pid", "--pair", "--key", "here"), 0);
	EXPECT_EQ_INT(p.nkeys, 1);
	EXPECT_TRUE(p.ka[0] && !strcmp(p.ka[0]->name, "pid"));
	EXPECT_TRUE(p.kb[0] && !strcmp(p.kb[0]->name, "next_pid"));
	/* off-CPU time: the task switched out, until its wakeup */
	EXPECT_EQ_INT(ks_pair_parse_tep(&p, tep, "sched:sched_switch/sched:sched_wakeup", "pid", "--pair", "--key", "here"), 0);
	EXPECT_TRUE(p.ka[0] && !strcmp(p.ka[0]->name, "prev_pid"));
	EXPECT_TRUE(p.kb[0] && !strcmp(p.kb[0]->name, "pid"));
	/* a field the event has is taken as written; common fields on both sides */
	EXPECT_EQ_INT(ks_pair_parse_tep(&p, tep, "sched:sched_wakeup/sched:sched_switch", "pid=prev_pid,common_pid", "--pair",
					"--key", "here"), 0);
	EXPECT_TRUE(p.kb[0] && !strcmp(p.kb[0]->name, "prev_pid"));
	EXPECT_TRUE(p.ka[1] && !strcmp(p.ka[1]->name, "common_pid") && p.kb[1] && !strcmp(p.kb[1]->name, "common_pid"));
	/* no field and no twin: refused */
	EXPECT_EQ_INT(ks_pair_parse_tep(&p, tep, "sched:sched_wakeup/sched:sched_switch", "comm_x", "--pair", "--key", "here"),
		      -EINVAL);
	tep_free(tep);
}
