/* Unit tests of the memory budget (src/core/budget.h): map costs at a CPU count, rows that fit. */
#include <linux/bpf.h>
#include "test.h"
#include "core/budget.h"

static struct ks_budget at(int ncpus, uint64_t limit)
{
	struct ks_budget b;

	ks_budget_init(&b, limit);
	b.ncpus = ncpus; /* as on a 128-CPU node, whatever this machine has */
	return b;
}

TEST(map_bytes_by_type)
{
	/* a per-CPU array pays for every possible CPU, a shared one once */
	EXPECT_EQ_U64(ks_map_bytes(BPF_MAP_TYPE_ARRAY, 4, 100, 10, 0, 128), 10 * 104);
	EXPECT_EQ_U64(ks_map_bytes(BPF_MAP_TYPE_PERCPU_ARRAY, 4, 8, 512, 0, 128), 512ull * (8 * 128 + 8));
	/* a hash element: header + key + value, all rounded to 8; two rows, 128 spare elements (preallocated), two 16-byte buckets */
	EXPECT_EQ_U64(ks_map_bytes(BPF_MAP_TYPE_HASH, 4, 12, 2, 0, 128), (2 + 128) * (48 + 8 + 16) + 2 * 16);
	EXPECT_EQ_U64(ks_map_bytes(BPF_MAP_TYPE_PERCPU_HASH, 8, 8, 1, BPF_F_NO_PREALLOC, 2), 48 + 8 + 8 + 16 + 16);
	EXPECT_EQ_U64(ks_map_bytes(BPF_MAP_TYPE_RINGBUF, 0, 0, 1 << 20, 0, 128), (1 << 20) + 4096);
}

TEST(rows_fit_the_share)
{
	struct ks_budget b = at(128, 64ull << 20);
	uint64_t row = ks_budget_row_bytes(&b, BPF_MAP_TYPE_PERCPU_HASH, 24, 7840, BPF_F_NO_PREALLOC);
	uint32_t n = ks_budget_rows(&b, 0.5, row, 1, 1u << 20, false);

	/* just under 1 MiB a row at 128 CPUs: 32 MiB holds 33 of them */
	EXPECT_EQ_U64(n, (32ull << 20) / row);
	EXPECT_TRUE((uint64_t)n * row <= (32ull << 20));
	/* a power of two rounds down, never past the share */
	n = ks_budget_rows(&b, 0.5, row, 1, 1u << 20, true);
	EXPECT_EQ_U64(n, 32);
	/* clamps */
	EXPECT_EQ_U64(ks_budget_rows(&b, 1, 8, 1, 1000, false), 1000);
	EXPECT_EQ_U64(ks_budget_rows(&b, 1, 1ull << 40, 4, 1000, false), 4);
}

TEST(default_limit)
{
	struct ks_budget b;

	ks_budget_init(&b, 0);
	EXPECT_EQ_U64(b.limit, KS_BUDGET_DEFAULT);
	EXPECT_TRUE(b.ncpus >= 1);
}

TEST(split_minimums_first_then_in_proportion)
{
	struct ks_budget_share a = { .min = 10, .wish = 30, .name = "a" }, b = { .min = 20, .wish = 80, .name = "b" };
	struct ks_budget_share *parts[] = { &a, &b };
	char why[256];

	/* all wishes fit: each its wish */
	EXPECT_EQ_INT(ks_budget_split(parts, 2, 200), 0);
	EXPECT_EQ_U64(a.bytes, 30);
	EXPECT_EQ_U64(b.bytes, 80);
	/* 60: minimums 30, the other 30 as 20 : 60 of the wishes beyond them */
	EXPECT_EQ_INT(ks_budget_split(parts, 2, 60), 0);
	EXPECT_EQ_U64(a.bytes, 10 + 7);
	EXPECT_EQ_U64(b.bytes, 20 + 22);
	EXPECT_TRUE(a.bytes + b.bytes <= 60);
	/* the minimums alone over: refused, and the line names both */
	a.bytes = b.bytes = 0;
	EXPECT_EQ_INT(ks_budget_split(parts, 2, 29), -E2BIG);
	EXPECT_EQ_U64(a.bytes, 0);
	ks_budget_split_error(parts, 2, 29 << 20, 128, why, sizeof(why));
	EXPECT_TRUE(strstr(why, "a 0.0 MiB") && strstr(why, "b 0.0 MiB") && strstr(why, "--max-memory"));
}
