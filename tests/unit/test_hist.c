/* Unit tests of the log-linear histogram: slot math over all of u64, and percentiles against exact sorted data. */
#include "test.h"
#include "core/hist.h"

/* The accuracy the layout promises (include/ksight/hist.h): the middle of a slot is within 1/32. */
#define PROMISED_REL_ERR (1.0 / 32)

TEST(slot_bounds_every_slot)
{
	for (unsigned int s = 0; s < KS_HIST_SLOTS; s++) {
		uint64_t lo = ks_hist_slot_low(s), hi = ks_hist_slot_high(s);

		ASSERT_TRUE(lo <= hi);
		ASSERT_EQ_U64(ks_hist_slot(lo), s);
		ASSERT_EQ_U64(ks_hist_slot(hi), s);
		if (s + 1 < KS_HIST_SLOTS) {
			ASSERT_EQ_U64(ks_hist_slot(hi + 1), s + 1);
			ASSERT_EQ_U64(ks_hist_slot_low(s + 1), hi + 1);
		} else {
			ASSERT_EQ_U64(hi, UINT64_MAX);
		}
		if (s < KS_HIST_SUB) {
			/* one exact slot per small value */
			ASSERT_EQ_U64(lo, s);
			ASSERT_EQ_U64(hi, s);
		} else {
			/* never wider than 1/16 of the lower bound */
			ASSERT_TRUE((hi - lo + 1) * 16 <= lo);
		}
	}
	EXPECT_EQ_U64(ks_hist_slot_low(0), 0);
}

TEST(slot_edges)
{
	static const uint64_t edges[] = { 0, 1, 15, 16, 17, 31, 32, 33, 1000, (1ull << 32) - 1, 1ull << 32,
					  (1ull << 63) - 1, 1ull << 63, (1ull << 63) + 1, UINT64_MAX - 1, UINT64_MAX };

	EXPECT_EQ_U64(ks_hist_slot(0), 0);
	EXPECT_EQ_U64(ks_hist_slot(1), 1);
	EXPECT_EQ_U64(ks_hist_slot(15), 15);
	EXPECT_EQ_U64(ks_hist_slot(16), 16);
	EXPECT_EQ_U64(ks_hist_slot(31), 31);
	EXPECT_EQ_U64(ks_hist_slot(32), 32);
	EXPECT_EQ_U64(ks_hist_slot(34), 33);
	EXPECT_EQ_U64(ks_hist_slot(UINT64_MAX), KS_HIST_SLOTS - 1);
	EXPECT_EQ_U64(ks_hist_slot(1ull << 63), KS_HIST_SLOTS - 16);
	EXPECT_EQ_U64(ks_hist_slot_low(KS_HIST_SLOTS - 16), 1ull << 63);
	for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
		unsigned int s = ks_hist_slot(edges[i]);

		EXPECT_TRUE(s < KS_HIST_SLOTS);
		EXPECT_TRUE(ks_hist_slot_low(s) <= edges[i] && edges[i] <= ks_hist_slot_high(s));
	}
}

TEST(log2_matches_clz)
{
	uint64_t st = 1;

	EXPECT_EQ_U64(ks_log2_u64(0), 0);
	for (int b = 0; b < 64; b++) {
		EXPECT_EQ_U64(ks_log2_u64(1ull << b), b);
		EXPECT_EQ_U64(ks_log2_u64(UINT64_MAX >> (63 - b)), b);
	}
	for (int i = 0; i < 200000; i++) {
		uint64_t v = t_rand(&st) >> (t_rand(&st) % 64);

		if (v)
			ASSERT_EQ_U64(ks_log2_u64(v), 63 - __builtin_clzll(v));
	}
}

/* Random values of every magnitude, not just large ones. */
static uint64_t rand_any(uint64_t *st)
{
	return t_rand(st) >> (t_rand(st) % 64);
}

TEST(slot_random_values_monotonic)
{
	uint64_t st = 42;

	for (int i = 0; i < 1000000; i++) {
		uint64_t a = rand_any(&st), b = rand_any(&st);
		unsigned int sa = ks_hist_slot(a), sb = ks_hist_slot(b);

		ASSERT_TRUE(sa < KS_HIST_SLOTS);
		ASSERT_TRUE(ks_hist_slot_low(sa) <= a && a <= ks_hist_slot_high(sa));
		/* monotonic: order of values is never reversed by their slots */
		if (a < b)
			ASSERT_TRUE(sa <= sb);
		else if (a > b)
			ASSERT_TRUE(sa >= sb);
		/* the next value is in the same slot or the next one */
		if (a != UINT64_MAX) {
			unsigned int sn = ks_hist_slot(a + 1);

			ASSERT_TRUE(sn == sa || sn == sa + 1);
		}
	}
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest rank of the fraction num/den of @n values, 1-based: ceil(n * num / den), in integers. */
static uint64_t exact_rank(uint64_t n, uint64_t num, uint64_t den)
{
	uint64_t r = (uint64_t)(((unsigned __int128)n * num + den - 1) / den);

	return r ? r : 1;
}

/*
 * Fills a histogram with @v (three ways: one value at a time, per-CPU
 * slot arrays, merged halves), checks count, sum, max and mean exactly
 * and p50/p90/p99/p99.9 against the sorted data.  Returns the largest
 * relative error of the percentiles.
 */
static double check_dist(const char *name, uint64_t *v, size_t n)
{
	static const struct { const char *name; double q; uint64_t num, den; } pct[] = {
		{ "p50", 0.50, 50, 100 }, { "p90", 0.90, 90, 100 }, { "p99", 0.99, 99, 100 },
		{ "p99.9", 0.999, 999, 1000 }, { "p0", 0, 0, 1 }, { "p100", 1, 1, 1 },
	};
	struct ks_hist *h = calloc(4, sizeof(*h)), *a = h + 1, *b = h + 2, *cpu = h + 3;
	__u64 *slots = calloc(KS_HIST_SLOTS, sizeof(__u64));
	uint64_t sum = 0, max = 0;
	double worst = 0;

	if (!h || !slots) {
		t_check(false, __FILE__, __LINE__, "out of memory");
		free(h);
		free(slots);
		return 1;
	}
	for (size_t i = 0; i < n; i++) {
		ks_hist_record(h, v[i]);
		ks_hist_record(i % 2 ? a : b, v[i]);
		if (i % 3 == 0)
			slots[ks_hist_slot(v[i])]++;
		sum += v[i];
		if (v[i] > max)
			max = v[i];
	}
	/* what the collectors do: add each CPU's raw slot array */
	ks_hist_add_slots(cpu, slots);
	EXPECT_EQ_U64(cpu->count, (n + 2) / 3);
	ks_hist_merge(a, b);
	EXPECT_EQ_U64(a->count, n);
	EXPECT_EQ_U64(a->sum, sum);
	EXPECT_EQ_U64(a->max, max);
	EXPECT_TRUE(!memcmp(a->slots, h->slots, sizeof(h->slots)));

	EXPECT_EQ_U64(h->count, n);
	EXPECT_EQ_U64(h->sum, sum);
	EXPECT_EQ_U64(h->max, max);
	EXPECT_NEAR(ks_hist_mean(h), (double)sum / (double)n, 1e-9 * ((double)sum / (double)n));

	qsort(v, n, sizeof(v[0]), u64_cmp);
	EXPECT_EQ_U64(v[n - 1], max);
	for (size_t i = 0; i < sizeof(pct) / sizeof(pct[0]); i++) {
		uint64_t exact = v[exact_rank(n, pct[i].num, pct[i].den) - 1];
		uint64_t est = ks_hist_percentile(h, pct[i].q);
		uint64_t diff = est > exact ? est - exact : exact - est;
		double rel = exact ? (double)diff / (double)exact : (double)diff;

		if (rel > worst)
			worst = rel;
		/* 32 * diff <= exact, in integers: the promise, with no rounding slack */
		t_check((unsigned __int128)diff * 32 <= exact, __FILE__, __LINE__,
			"%s %s: estimate %" PRIu64 " vs exact %" PRIu64 " (relative error %.4f)", name, pct[i].name, est,
			exact, rel);
		/* the last rank is the max, which the histogram knows exactly */
		if (exact_rank(n, pct[i].num, pct[i].den) == n)
			t_check(est == max, __FILE__, __LINE__, "%s %s: last rank %" PRIu64 " != max %" PRIu64, name,
				pct[i].name, est, max);
		/* below 16 the slots are exact */
		if (exact < KS_HIST_SUB)
			t_check(est == exact, __FILE__, __LINE__, "%s %s: %" PRIu64 " != exact %" PRIu64, name,
				pct[i].name, est, exact);
	}
	printf("# %-12s n=%-7zu p50=%-10" PRIu64 " p99.9=%-12" PRIu64 " max=%-12" PRIu64
	       " worst relative error %.5f\n",
	       name, n, ks_hist_percentile(h, 0.5), ks_hist_percentile(h, 0.999), max, worst);
	free(h);
	free(slots);
	return worst;
}

#define N 200000

enum dist { UNIFORM, EXPONENTIAL, LOGNORMAL, BIMODAL, CONSTANT, SMALL, WIDE, HUGE_VALS };

static uint64_t draw(enum dist d, uint64_t *st)
{
	double u = t_rand_unit(st);

	switch (d) {
	case UNIFORM:
		return 100 + t_rand(st) % 1000000;
	case EXPONENTIAL:
		return (uint64_t)(-log(u) * 50000.0);
	case LOGNORMAL: {
		/* Box-Muller for a normal, then exp: latency-like, heavy right tail */
		double z = sqrt(-2 * log(u)) * cos(2 * M_PI * t_rand_unit(st));

		return (uint64_t)exp(log(20000.0) + 1.5 * z);
	}
	case BIMODAL:
		/* a fast path and a slow 3% tail: p99 sits in the second mode */
		if (u < 0.97)
			return 800 + t_rand(st) % 400;
		return 900000 + t_rand(st) % 200000;
	case CONSTANT:
		return 12345;
	case SMALL:
		return t_rand(st) % 16;
	case WIDE:
		return rand_any(st) >> 24; /* 0 .. 2^40, every magnitude */
	case HUGE_VALS:
		/* 2^55 .. 2^56: large, and few enough that the u64 sum does not overflow */
		return (1ull << 55) + (t_rand(st) >> 9);
	}
	return 0;
}

TEST(percentiles_random_distributions)
{
	static const struct { const char *name; enum dist d; size_t n; } dists[] = {
		{ "uniform", UNIFORM, N }, { "exponential", EXPONENTIAL, N }, { "lognormal", LOGNORMAL, N },
		{ "bimodal", BIMODAL, N }, { "constant", CONSTANT, N }, { "small", SMALL, N },
		{ "wide", WIDE, N }, { "huge", HUGE_VALS, 200 }, { "one", LOGNORMAL, 1 },
		{ "two", EXPONENTIAL, 2 }, { "seven", UNIFORM, 7 }, { "thousand", BIMODAL, 1000 },
	};
	uint64_t *v = calloc(N, sizeof(*v)), st = 7;
	double worst = 0;

	ASSERT_TRUE(v != NULL);
	for (size_t i = 0; i < sizeof(dists) / sizeof(dists[0]); i++) {
		double w;

		for (size_t k = 0; k < dists[i].n; k++)
			v[k] = draw(dists[i].d, &st);
		w = check_dist(dists[i].name, v, dists[i].n);
		if (w > worst)
			worst = w;
	}
	printf("# worst relative error over all distributions: %.5f (promised %.5f, required %.5f)\n", worst,
	       PROMISED_REL_ERR, 1.0 / 16);
	EXPECT_LE_DBL(worst, PROMISED_REL_ERR);
	free(v);
}

/*
 * Nearest rank must be exact for every percentile, not only the four the
 * writers show: ceil(q * n) in floating point is one rank too high when
 * q * n rounds up past an integer (0.07 * 100 is 7.000000000000001).
 * Values below 16 have exact slots, so the estimate must equal the data.
 */
TEST(percentile_rank_exact_for_every_q)
{
	static const size_t sizes[] = { 1, 2, 3, 10, 99, 100, 101, 300, 1000, 4096, 10000 };
	uint64_t *v = calloc(10000, sizeof(*v));
	struct ks_hist *h = calloc(1, sizeof(*h));

	ASSERT_TRUE(v && h);
	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		size_t n = sizes[si];

		memset(h, 0, sizeof(*h));
		for (size_t i = 0; i < n; i++) {
			v[i] = i * 16 / n; /* sorted, 0..15 */
			ks_hist_record(h, v[i]);
		}
		for (uint64_t k = 1; k < 1000; k++) {
			double q = (double)k / 1000;
			uint64_t exact = v[exact_rank(n, k, 1000) - 1];

			if (!t_check(ks_hist_percentile(h, q) == exact, __FILE__, __LINE__,
				     "n=%zu q=%.3f: %" PRIu64 " != exact %" PRIu64, n, q, ks_hist_percentile(h, q),
				     exact))
				break;
		}
	}
	free(v);
	free(h);
}

TEST(percentile_empty_and_clamped)
{
	struct ks_hist *h = calloc(1, sizeof(*h));

	ASSERT_TRUE(h != NULL);
	EXPECT_EQ_U64(ks_hist_percentile(h, 0.5), 0);
	EXPECT_EQ_U64(ks_hist_mean(h), 0);
	/* one value at the bottom of a wide slot: the middle of the slot would overshoot the max */
	ks_hist_record(h, 1ull << 40);
	EXPECT_EQ_U64(ks_hist_percentile(h, 0.5), 1ull << 40);
	EXPECT_EQ_U64(ks_hist_percentile(h, 1.0), 1ull << 40);
	/* out-of-range q is clamped, not undefined */
	EXPECT_EQ_U64(ks_hist_percentile(h, -1), 1ull << 40);
	EXPECT_EQ_U64(ks_hist_percentile(h, 2), 1ull << 40);
	/* the top slot, whose high end is UINT64_MAX */
	ks_hist_record(h, UINT64_MAX - h->sum);
	EXPECT_EQ_U64(h->sum, UINT64_MAX);
	EXPECT_TRUE(UINT64_MAX / 32 >= UINT64_MAX - (1ull << 40) - ks_hist_percentile(h, 1.0));
	free(h);
}
