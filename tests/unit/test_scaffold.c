/* Unit tests of the collector scaffold's pure parts: the u32-slot histogram helper every collector's rows go through. */
#include "test.h"
#include "core/scaffold.h"

TEST(hist_of_u32_counts_sums_and_keeps_sum_max)
{
	static const uint32_t slots[5] = { 1, 0, 3, 0xffffffffu, 2 };
	struct ks_hist *h = ks_hist_of_u32(slots, 5, 1234, 99);

	ASSERT_TRUE(h != NULL);
	EXPECT_EQ_U64(h->count, 1 + 3 + 2 + 0xffffffffull);
	EXPECT_EQ_U64(h->slots[0], 1);
	EXPECT_EQ_U64(h->slots[3], 0xffffffffull);
	EXPECT_EQ_U64(h->slots[5], 0);
	EXPECT_EQ_U64(h->sum, 1234);
	EXPECT_EQ_U64(h->max, 99);
	free(h);
}

TEST(hist_add_u32_accumulates_copies)
{
	static const uint32_t cpu0[3] = { 2, 0, 1 }, cpu1[3] = { 1, 4, 0 };
	struct ks_hist h = { 0 };

	ks_hist_add_u32(&h, cpu0, 3);
	ks_hist_add_u32(&h, cpu1, 3);
	EXPECT_EQ_U64(h.count, 8);
	EXPECT_EQ_U64(h.slots[0], 3);
	EXPECT_EQ_U64(h.slots[1], 4);
	EXPECT_EQ_U64(h.slots[2], 1);
}

TEST(hist_add_u32_stops_at_the_layout)
{
	static uint32_t many[KS_HIST_SLOTS + 8];
	struct ks_hist h = { 0 };

	for (unsigned int i = 0; i < KS_HIST_SLOTS + 8; i++)
		many[i] = 1;
	/* a BPF row longer than the layout (never expected) counts what fits, writes nothing past it */
	ks_hist_add_u32(&h, many, KS_HIST_SLOTS + 8);
	EXPECT_EQ_U64(h.count, KS_HIST_SLOTS);
	EXPECT_EQ_U64(h.slots[KS_HIST_SLOTS - 1], 1);
}
