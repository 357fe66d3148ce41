/* Histogram arithmetic in user space; slot layout from include/ksight/hist.h. */
#include <math.h>
#include "core/hist.h"

void ks_hist_add_slots(struct ks_hist *h, const __u64 *slots)
{
	ks_hist_add_slots_n(h, slots, KS_HIST_SLOTS);
}

void ks_hist_add_slots_n(struct ks_hist *h, const __u64 *slots, unsigned int n)
{
	if (n > KS_HIST_SLOTS)
		n = KS_HIST_SLOTS;
	for (unsigned int i = 0; i < n; i++) {
		h->slots[i] += slots[i];
		h->count += slots[i];
	}
}

void ks_hist_add_bpf(struct ks_hist *h, const struct ks_hist_bpf *b)
{
	ks_hist_add_slots(h, b->slots);
	h->sum += b->sum;
	if (b->max > h->max)
		h->max = b->max;
}

void ks_hist_merge(struct ks_hist *dst, const struct ks_hist *src)
{
	for (unsigned int i = 0; i < KS_HIST_SLOTS; i++)
		dst->slots[i] += src->slots[i];
	dst->count += src->count;
	dst->sum += src->sum;
	if (src->max > dst->max)
		dst->max = src->max;
}

void ks_hist_record(struct ks_hist *h, uint64_t v)
{
	h->slots[ks_hist_slot(v)]++;
	h->count++;
	h->sum += v;
	if (v > h->max)
		h->max = v;
}

uint64_t ks_hist_percentile(const struct ks_hist *h, double q)
{
	uint64_t rank, seen = 0;

	if (!h->count)
		return 0;
	if (!(q > 0))
		q = 0;
	if (q > 1)
		q = 1;
	/*
	 * ceil(q * count) in integers, with q taken in millionths: in floating
	 * point 0.07 * 100 is 7.000000000000001, one rank too high.
	 */
	rank = (uint64_t)(((unsigned __int128)llround(q * 1e6) * h->count + 999999) / 1000000);
	if (rank < 1)
		rank = 1;
	/* the last rank is the largest value, which is known exactly */
	if (rank >= h->count && h->max)
		return h->max;
	for (unsigned int i = 0; i < KS_HIST_SLOTS; i++) {
		seen += h->slots[i];
		if (seen >= rank) {
			uint64_t lo = ks_hist_slot_low(i), hi = ks_hist_slot_high(i);
			uint64_t mid = lo + (hi - lo) / 2;

			if (h->max && mid > h->max)
				mid = h->max;
			return mid;
		}
	}
	return h->max;
}

double ks_hist_mean(const struct ks_hist *h)
{
	return h->count ? (double)h->sum / (double)h->count : 0.0;
}
