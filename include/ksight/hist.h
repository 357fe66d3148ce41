/* Log-linear histogram layout and slot math, shared by BPF programs and user space. */
#ifndef KSIGHT_HIST_H
#define KSIGHT_HIST_H

#include "types.h"

/*
 * Values below 16 get one exact slot each.  Every power-of-two range
 * [2^p, 2^(p+1)) with p >= 4 is split into 16 equal sub-buckets, so a slot
 * is never wider than 1/16 of its lower bound: reporting the middle of a
 * slot is within 1/32 of any value in it.  The layout covers all of u64.
 */
#define KS_HIST_SUB_BITS 4
#define KS_HIST_SUB (1u << KS_HIST_SUB_BITS)
/* slot = (p - 3) * 16 + sub for p in [4, 63], plus 16 exact slots */
#define KS_HIST_SLOTS ((64 - KS_HIST_SUB_BITS + 1) * KS_HIST_SUB)
/*
 * The first slots, enough for every value below 2^@bits: shorter arrays
 * for values known to be smaller (sizes, depths) or where the rare larger
 * ones may share the last slot (a latency above 2^40 ns is 18 minutes).
 */
#define KS_HIST_SLOTS_BELOW(bits) (((bits) - KS_HIST_SUB_BITS + 1) * KS_HIST_SUB)
#define KS_HIST_SLOTS32 KS_HIST_SLOTS_BELOW(32)

/*
 * floor(log2(v)) by a branchy binary search on shifts.  clang-14's BPF
 * backend crashes on __builtin_clzll, so the same code serves both sides.
 */
static __always_inline unsigned int ks_log2_u64(unsigned long long v)
{
	unsigned int r = 0;

	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) { r += 1; }
	return r;
}

static __always_inline unsigned int ks_hist_slot(unsigned long long v)
{
	unsigned int p;

	if (v < KS_HIST_SUB)
		return (unsigned int)v;
	p = ks_log2_u64(v);
	return ((p - KS_HIST_SUB_BITS + 1) << KS_HIST_SUB_BITS) +
	       (unsigned int)((v >> (p - KS_HIST_SUB_BITS)) & (KS_HIST_SUB - 1));
}

/*
 * The slot of @v in an array of the first @n slots: the last takes all above.
 * In BPF the slot is zero-extended once and hidden from the optimizer, so
 * the clamp tests the very register that indexes: otherwise clang compares
 * one zero-extended copy and indexes with another, and a verifier that
 * links no registers across that (6.1's) sees an unbounded index.
 */
static __always_inline unsigned int ks_hist_slot_max(unsigned long long v, unsigned int n)
{
	unsigned long long s = ks_hist_slot(v);

#ifdef barrier_var /* libbpf's bpf_helpers.h: BPF programs only */
	barrier_var(s);
#endif
	if (s >= n)
		s = n - 1;
	return (unsigned int)s;
}

/* Smallest value that falls into @slot. */
static __always_inline unsigned long long ks_hist_slot_low(unsigned int slot)
{
	unsigned int p, sub;

	if (slot < KS_HIST_SUB)
		return slot;
	p = (slot >> KS_HIST_SUB_BITS) + KS_HIST_SUB_BITS - 1;
	sub = slot & (KS_HIST_SUB - 1);
	return (1ull << p) + ((unsigned long long)sub << (p - KS_HIST_SUB_BITS));
}

/* Largest value that falls into @slot. */
static __always_inline unsigned long long ks_hist_slot_high(unsigned int slot)
{
	if (slot + 1 >= KS_HIST_SLOTS)
		return ~0ull;
	return ks_hist_slot_low(slot + 1) - 1;
}

/*
 * The histogram part of a BPF-side row: sum and max beside the slots, so
 * one user-space helper (ks_hist_add_bpf) reads any collector's rows.
 * The count is the sum of the slots.
 */
struct ks_hist_bpf {
	__u64 sum;
	__u64 max;
	__u64 slots[KS_HIST_SLOTS];
};

#endif /* KSIGHT_HIST_H */
