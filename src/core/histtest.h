/* Two-sample tests on log-linear histograms (`ksight diff`): Mann-Whitney over buckets, quantile confidence intervals, a count test. */
#ifndef KS_CORE_HISTTEST_H
#define KS_CORE_HISTTEST_H

#include <stdbool.h>
#include <stdint.h>
#include "core/hist.h"
#include "core/stats.h"

/*
 * The Mann-Whitney U test of @a against @b, each bucket one group of ties
 * (values in one slot are indistinguishable): mid-ranks, the tie-corrected
 * variance, a continuity correction, the normal approximation (the same
 * numbers ks_mann_whitney gives for samples of the slots' values).
 * -EINVAL when a histogram is empty.
 */
int ks_mwu_hist(const struct ks_hist *a, const struct ks_hist *b, struct ks_mwu *out);

/* A distribution-free confidence interval for a quantile, at bucket resolution. */
struct ks_qci {
	uint64_t est;	/* ks_hist_percentile(h, q) */
	uint64_t lo;	/* the low edge of the slot of order statistic l; 0 when l < 1 */
	uint64_t hi;	/* the high edge of the slot of order statistic u (at most the max); UINT64_MAX when u > n */
	bool open_lo, open_hi;
};

/*
 * The interval [X(l), X(u)] that holds the true @q quantile with probability
 * at least 1 - @alpha: l and u are the ranks nq -/+ z sqrt(nq(1-q)) (z the
 * two-sided normal quantile of @alpha, rounded outwards, u one past), as the
 * binomial count of values below the quantile says.  Each rank is mapped to
 * its slot's edges, so the interval can only be wider than the exact one.
 */
void ks_hist_quantile_ci(const struct ks_hist *h, double q, double alpha, struct ks_qci *out);

/* z with P(Z > z) = @p for a standard normal Z, 0 < p < 1 (by bisection on erfc). */
double ks_normal_upper_quantile(double p);
/* The two-sided p-value of a standard normal z. */
double ks_normal_p2(double z);

/*
 * Counts @ca and @cb of two windows of equal length taken as Poisson: the
 * conditional test (cb given ca + cb is binomial(1/2)) by its normal
 * approximation with a continuity correction.  Returns the signed z (> 0:
 * B more); 0 when both are 0.
 */
double ks_count_z(uint64_t ca, uint64_t cb);

#endif
