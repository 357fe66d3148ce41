/* Two-sample statistics for `ksight diff`: quantiles of sorted samples and the Mann-Whitney U test. */
#ifndef KS_CORE_STATS_H
#define KS_CORE_STATS_H

#include <stddef.h>
#include <stdint.h>

/* The nearest-rank @q quantile (0 < q <= 1) of @n sorted values; 0 when @n is 0. */
uint64_t ks_quantile_sorted(const uint64_t *v, size_t n, double q);

struct ks_mwu {
	double u_b;	/* U of the second sample: pairs (a, b) with b > a, ties counted half */
	double z;	/* normal approximation, tie-corrected, with continuity correction; signed: > 0 when b is larger */
	double p;	/* two-sided p-value */
	double a12;	/* effect size: P(b > a) + P(b == a) / 2, 0.5 = no shift */
};

/*
 * The Mann-Whitney U test of sorted samples @a (@na) and @b (@nb), in one
 * merge pass.  -EINVAL when a sample is empty.
 */
int ks_mann_whitney(const uint64_t *a, size_t na, const uint64_t *b, size_t nb, struct ks_mwu *out);
/*
 * U, z and p from the second sample's rank sum @rb, the sizes @n1, @n2 (> 0)
 * and the ties' sum of t^3 - t: the part every form of the test shares.
 */
void ks_mwu_finish(double rb, double n1, double n2, double ties, struct ks_mwu *out);

#endif
