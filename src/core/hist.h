/* User-space log-linear histograms: merging per-CPU slots and computing percentiles. */
#ifndef KS_CORE_HIST_H
#define KS_CORE_HIST_H

#include <stdint.h>
#include <linux/types.h>
#include "ksight/hist.h"

struct ks_hist {
	uint64_t count;
	uint64_t sum;
	uint64_t max;
	uint64_t slots[KS_HIST_SLOTS];
};

/* Adds a raw slot array (one CPU's copy) to @h and recounts @h->count. */
void ks_hist_add_slots(struct ks_hist *h, const __u64 *slots);
/* The same for a shorter array holding slots [0, @n) only, e.g. of values known to fit 32 bits. */
void ks_hist_add_slots_n(struct ks_hist *h, const __u64 *slots, unsigned int n);
/* Adds one BPF-side histogram (one CPU's copy) to @h. */
void ks_hist_add_bpf(struct ks_hist *h, const struct ks_hist_bpf *b);
void ks_hist_merge(struct ks_hist *dst, const struct ks_hist *src);
/* Adds one value: for tests and user-side histograms. */
void ks_hist_record(struct ks_hist *h, uint64_t v);
/*
 * Nearest-rank percentile estimate, @q in [0, 1] (to six decimals): the
 * middle of the slot that holds the rank, clamped to the exact max (and
 * the exact max for the last rank, so p99 of 50 values is their max).
 * Within 1/32 of the exact value for every value >= 16, exact below.
 * 0 when empty.
 */
uint64_t ks_hist_percentile(const struct ks_hist *h, double q);
double ks_hist_mean(const struct ks_hist *h);

#endif
