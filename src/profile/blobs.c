/* A table of distinct byte strings with a summed value each (open addressing on a 64-bit FNV-1a hash). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "core/hash.h"
#include "profile/blobs.h"

void ks_blobs_init(struct ks_blobs *b)
{
	memset(b, 0, sizeof(*b));
}

void ks_blobs_free(struct ks_blobs *b)
{
	for (size_t i = 0; i < b->n; i++)
		free(b->data[i]);
	free(b->data);
	free(b->len);
	free(b->value);
	free(b->hash);
	ks_blobs_init(b);
}

static uint64_t blob_hash(const uint8_t *p, uint32_t n)
{
	return ks_fnv1a(p, n, KS_FNV1A_INIT);
}

/* Doubles the hash table (kept at most half full) and places every blob again. */
static int rehash(struct ks_blobs *b)
{
	size_t cap = b->hash_cap ? b->hash_cap * 2 : 1024;
	uint32_t *t = calloc(cap, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < b->n; i++) {
		size_t h = blob_hash(b->data[i], b->len[i]) & (cap - 1);

		while (t[h])
			h = (h + 1) & (cap - 1);
		t[h] = i + 1;
	}
	free(b->hash);
	b->hash = t;
	b->hash_cap = cap;
	return 0;
}

/* Room for one more blob in the arrays. */
static int reserve(struct ks_blobs *b)
{
	size_t cap = b->cap ? b->cap * 2 : 256;
	uint8_t **d;
	uint32_t *l;
	uint64_t *v;

	if (b->n < b->cap)
		return 0;
	d = realloc(b->data, cap * sizeof(*d));
	if (!d)
		return -ENOMEM;
	b->data = d;
	l = realloc(b->len, cap * sizeof(*l));
	if (!l)
		return -ENOMEM;
	b->len = l;
	v = realloc(b->value, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	b->value = v;
	b->cap = cap;
	return 0;
}

int64_t ks_blobs_add(struct ks_blobs *b, const void *data, uint32_t len, uint64_t value)
{
	size_t h;
	uint8_t *copy;

	if ((b->n + 1) * 2 > b->hash_cap && rehash(b))
		return -ENOMEM;
	h = blob_hash(data, len) & (b->hash_cap - 1);
	for (; b->hash[h]; h = (h + 1) & (b->hash_cap - 1)) {
		uint32_t i = b->hash[h] - 1;

		if (b->len[i] == len && !memcmp(b->data[i], data, len)) {
			b->value[i] += value;
			return i;
		}
	}
	if (reserve(b))
		return -ENOMEM;
	copy = malloc(len ? len : 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, data, len);
	b->data[b->n] = copy;
	b->len[b->n] = len;
	b->value[b->n] = value;
	b->bytes += len;
	b->hash[h] = b->n + 1;
	return b->n++;
}
