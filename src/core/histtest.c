/* Two-sample tests on log-linear histograms: each slot a group of ties, quantiles as order statistics at slot resolution. */
#include <errno.h>
#include <math.h>
#include "core/histtest.h"

int ks_mwu_hist(const struct ks_hist *a, const struct ks_hist *b, struct ks_mwu *out)
{
	double na = 0, nb = 0, rank = 0, rb = 0, ties = 0;

	for (unsigned int i = 0; i < KS_HIST_SLOTS; i++) {
		na += (double)a->slots[i];
		nb += (double)b->slots[i];
	}
	if (!na || !nb)
		return -EINVAL;
	/* one slot at a time, in value order: its values share the mean of the ranks they span */
	for (unsigned int i = 0; i < KS_HIST_SLOTS; i++) {
		double ca = (double)a->slots[i], cb = (double)b->slots[i], t = ca + cb;

		if (!t)
			continue;
		rb += cb * (rank + (t + 1) / 2);
		rank += t;
		ties += t * t * t - t;
	}
	ks_mwu_finish(rb, na, nb, ties, out);
	return 0;
}

double ks_normal_p2(double z)
{
	return erfc(fabs(z) / sqrt(2.0));
}

double ks_normal_upper_quantile(double p)
{
	double lo = -40, hi = 40;

	if (!(p > 0))
		return INFINITY;
	if (!(p < 1))
		return -INFINITY;
	/* P(Z > z) = erfc(z / sqrt 2) / 2 falls with z: 200 halvings are far below double's precision */
	for (int i = 0; i < 200; i++) {
		double mid = (lo + hi) / 2;

		if (erfc(mid / sqrt(2.0)) / 2 > p)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

/* The slot holding the @rank-th smallest value (1-based, rank <= count). */
static unsigned int slot_of_rank(const struct ks_hist *h, uint64_t rank)
{
	uint64_t seen = 0;

	for (unsigned int i = 0; i < KS_HIST_SLOTS; i++) {
		seen += h->slots[i];
		if (seen >= rank)
			return i;
	}
	return KS_HIST_SLOTS - 1;
}

void ks_hist_quantile_ci(const struct ks_hist *h, double q, double alpha, struct ks_qci *out)
{
	double n = (double)h->count, z = ks_normal_upper_quantile(alpha / 2), c = n * q, w = z * sqrt(n * q * (1 - q));
	double l = floor(c - w), u = ceil(c + w) + 1;

	out->est = ks_hist_percentile(h, q);
	out->open_lo = !(l >= 1);
	out->open_hi = !(u <= n);
	out->lo = out->open_lo ? 0 : ks_hist_slot_low(slot_of_rank(h, (uint64_t)l));
	if (out->open_hi) {
		out->hi = UINT64_MAX;
	} else {
		out->hi = ks_hist_slot_high(slot_of_rank(h, (uint64_t)u));
		if (h->max && out->hi > h->max)
			out->hi = h->max;
	}
	/* an estimate is within its own slot: keep the interval around it */
	if (out->lo > out->est)
		out->lo = out->est;
	if (out->hi < out->est)
		out->hi = out->est;
}

double ks_count_z(uint64_t ca, uint64_t cb)
{
	double a = (double)ca, b = (double)cb, d;

	if (!ca && !cb)
		return 0;
	/* cb ~ Bin(a + b, 1/2) under no change: mean (a + b) / 2, sd sqrt(a + b) / 2 */
	d = fabs(b - a) / 2 - 0.5;
	return (d > 0 ? d : 0) / (sqrt(a + b) / 2) * (b >= a ? 1 : -1);
}
