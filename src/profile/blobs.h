/* A table of distinct byte strings with a summed value each: the profile's copies of stacks and rows, merged by content. */
#ifndef KS_PROFILE_BLOBS_H
#define KS_PROFILE_BLOBS_H

#include <stddef.h>
#include <stdint.h>

/*
 * Blobs are numbered in the order they were first added; the number stays
 * theirs for the table's life.  Each blob's bytes are copied in.
 */
struct ks_blobs {
	uint8_t **data;
	uint32_t *len;
	uint64_t *value;
	size_t n, cap;
	uint64_t bytes; /* of the blobs' data, all together */
	uint32_t *hash; /* index + 1, open addressing */
	size_t hash_cap;
};

/* An empty table (all zero is one too). */
void ks_blobs_init(struct ks_blobs *b);
void ks_blobs_free(struct ks_blobs *b);
/* Adds @value to blob @data[0..len), added when new; its number, or -ENOMEM. */
int64_t ks_blobs_add(struct ks_blobs *b, const void *data, uint32_t len, uint64_t value);

#endif
