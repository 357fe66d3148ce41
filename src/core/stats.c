/* Quantiles and the Mann-Whitney U test over sorted uint64 samples (latencies in ns). */
#include <errno.h>
#include <math.h>
#include "core/stats.h"

uint64_t ks_quantile_sorted(const uint64_t *v, size_t n, double q)
{
	size_t k;

	if (!n)
		return 0;
	k = (size_t)ceil(q * (double)n);
	return v[k ? (k > n ? n - 1 : k - 1) : 0];
}

int ks_mann_whitney(const uint64_t *a, size_t na, const uint64_t *b, size_t nb, struct ks_mwu *out)
{
	double rank = 0, rb = 0, ties = 0, n1 = (double)na, n2 = (double)nb;
	size_t i = 0, j = 0;

	if (!na || !nb)
		return -EINVAL;
	/* one group of equal values at a time: each gets the mean of the ranks it spans */
	while (i < na || j < nb) {
		uint64_t v = i < na && (j >= nb || a[i] <= b[j]) ? a[i] : b[j];
		double ca = 0, cb = 0, t;

		while (i < na && a[i] == v) {
			i++;
			ca++;
		}
		while (j < nb && b[j] == v) {
			j++;
			cb++;
		}
		t = ca + cb;
		rb += cb * (rank + (t + 1) / 2);
		rank += t;
		ties += t * t * t - t;
	}
	ks_mwu_finish(rb, n1, n2, ties, out);
	return 0;
}

void ks_mwu_finish(double rb, double n1, double n2, double ties, struct ks_mwu *out)
{
	double n = n1 + n2, mean, var, d;

	out->u_b = rb - n2 * (n2 + 1) / 2;
	out->a12 = out->u_b / (n1 * n2);
	mean = n1 * n2 / 2;
	var = n1 * n2 / 12 * ((n + 1) - (n > 1 ? ties / (n * (n - 1)) : 0));
	if (var <= 0) {
		/* every value the same: nothing tells the samples apart */
		out->z = 0;
		out->p = 1;
		return;
	}
	d = fabs(out->u_b - mean) - 0.5;
	out->z = (d > 0 ? d : 0) / sqrt(var) * (out->u_b >= mean ? 1 : -1);
	out->p = erfc(fabs(out->z) / sqrt(2.0));
}
