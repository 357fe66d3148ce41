/* Unit tests of core/stats.c: nearest-rank quantiles and the Mann-Whitney U test against hand-worked values. */
#include "test.h"
#include "core/stats.h"

TEST(quantiles_nearest_rank)
{
	uint64_t v[10] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };

	EXPECT_EQ_U64(ks_quantile_sorted(v, 10, 0.5), 5);
	EXPECT_EQ_U64(ks_quantile_sorted(v, 10, 0.9), 9);
	EXPECT_EQ_U64(ks_quantile_sorted(v, 10, 0.99), 10);
	EXPECT_EQ_U64(ks_quantile_sorted(v, 10, 1.0), 10);
	EXPECT_EQ_U64(ks_quantile_sorted(v, 1, 0.5), 1);
	EXPECT_EQ_U64(ks_quantile_sorted(v, 0, 0.5), 0);
}

/*
 * {1,2,3} against {4,5,6}: U_b = 9 of 9, mean 4.5, variance 9/12 * 7 = 5.25,
 * z = (4.5 - 0.5) / sqrt(5.25) = 1.7457, p = erfc(z / sqrt 2) = 0.080856
 * (scipy.stats.mannwhitneyu, method='asymptotic', gives the same).
 */
TEST(mwu_separated_small)
{
	uint64_t a[] = { 1, 2, 3 }, b[] = { 4, 5, 6 };
	struct ks_mwu m;

	ASSERT_EQ_INT(ks_mann_whitney(a, 3, b, 3, &m), 0);
	EXPECT_NEAR(m.u_b, 9.0, 1e-9);
	EXPECT_NEAR(m.a12, 1.0, 1e-9);
	EXPECT_NEAR(m.z, 1.745743, 1e-5);
	EXPECT_NEAR(m.p, 0.080856, 1e-5);
	/* the other way round: same p, the sign of z turns */
	ASSERT_EQ_INT(ks_mann_whitney(b, 3, a, 3, &m), 0);
	EXPECT_NEAR(m.u_b, 0.0, 1e-9);
	EXPECT_NEAR(m.z, -1.745743, 1e-5);
	EXPECT_NEAR(m.p, 0.080856, 1e-5);
}

/*
 * Ties: {1,2,2,3} against {2,3,3,4}.  Ranks: 1 -> 1; the three 2s
 * -> ranks 2..4, mean 3; the three 3s -> 5..7, mean 6; 4 -> 8.
 * R_b = 3 + 6 + 6 + 8 = 23, U_b = 23 - 10 = 13; ties 2 * (27 - 3) = 48;
 * variance 16/12 * (9 - 48/56) = 10.857; z = (13 - 8 - 0.5) / 3.2950 = 1.3657.
 */
TEST(mwu_ties)
{
	uint64_t a[] = { 1, 2, 2, 3 }, b[] = { 2, 3, 3, 4 };
	struct ks_mwu m;

	ASSERT_EQ_INT(ks_mann_whitney(a, 4, b, 4, &m), 0);
	EXPECT_NEAR(m.u_b, 13.0, 1e-9);
	EXPECT_NEAR(m.z, 4.5 / sqrt(16.0 / 12 * (9 - 48.0 / 56)), 1e-9);
	EXPECT_NEAR(m.a12, 13.0 / 16, 1e-9);
}

TEST(mwu_same_sample_is_no_change)
{
	uint64_t a[200];
	struct ks_mwu m;

	for (int i = 0; i < 200; i++)
		a[i] = 1000 + (uint64_t)i * 7;
	ASSERT_EQ_INT(ks_mann_whitney(a, 200, a, 200, &m), 0);
	EXPECT_NEAR(m.z, 0.0, 1e-12);
	EXPECT_NEAR(m.p, 1.0, 1e-12);
	EXPECT_NEAR(m.a12, 0.5, 1e-12);
}

TEST(mwu_all_equal_and_empty)
{
	uint64_t a[] = { 5, 5, 5 }, b[] = { 5, 5 };
	struct ks_mwu m;

	ASSERT_EQ_INT(ks_mann_whitney(a, 3, b, 2, &m), 0);
	EXPECT_NEAR(m.p, 1.0, 1e-12);
	EXPECT_NEAR(m.a12, 0.5, 1e-12);
	EXPECT_EQ_INT(ks_mann_whitney(a, 0, b, 2, &m), -EINVAL);
}

/* 1 ms against 2 ms sleeps with a little jitter: a shift no noise explains */
TEST(mwu_doubled_latency)
{
	uint64_t a[500], b[500];
	struct ks_mwu m;

	for (int i = 0; i < 500; i++) {
		a[i] = 1050000 + (uint64_t)i * 100;
		b[i] = 2050000 + (uint64_t)i * 100;
	}
	ASSERT_EQ_INT(ks_mann_whitney(a, 500, b, 500, &m), 0);
	EXPECT_TRUE(m.p < 1e-100);
	EXPECT_NEAR(m.a12, 1.0, 1e-12);
	EXPECT_TRUE(m.z > 20);
}
