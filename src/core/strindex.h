/* An open-addressing index from hashed keys to positions in the caller's array: diff's rows and stacks found in O(1), not by a scan each. */
#ifndef KS_CORE_STRINDEX_H
#define KS_CORE_STRINDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ks_strindex {
	size_t *slot;	/* position + 1; 0: empty */
	uint64_t *hash;
	size_t cap;	/* a power of two, or 0 */
	size_t n;
};

/*
 * The position of the key with hash @h for which @eq(ctx, position) holds,
 * or -1.  Equal hashes of different keys are told apart by @eq.
 */
long ks_strindex_find(const struct ks_strindex *x, uint64_t h, bool (*eq)(const void *ctx, size_t pos), const void *ctx);
/* Adds @pos under @h (not there yet): 0 or -ENOMEM. */
int ks_strindex_add(struct ks_strindex *x, uint64_t h, size_t pos);
void ks_strindex_free(struct ks_strindex *x);

#endif
