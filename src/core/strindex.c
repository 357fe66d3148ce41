/* Open addressing with linear probing, kept under half full; the hashes are stored so growing needs no keys. */
#include <errno.h>
#include <stdlib.h>
#include "core/strindex.h"

long ks_strindex_find(const struct ks_strindex *x, uint64_t h, bool (*eq)(const void *ctx, size_t pos), const void *ctx)
{
	if (!x->cap)
		return -1;
	for (size_t i = h & (x->cap - 1);; i = (i + 1) & (x->cap - 1)) {
		if (!x->slot[i])
			return -1;
		if (x->hash[i] == h && eq(ctx, x->slot[i] - 1))
			return (long)(x->slot[i] - 1);
	}
}

static void put(size_t *slot, uint64_t *hash, size_t cap, uint64_t h, size_t pos1)
{
	size_t i = h & (cap - 1);

	while (slot[i])
		i = (i + 1) & (cap - 1);
	slot[i] = pos1;
	hash[i] = h;
}

int ks_strindex_add(struct ks_strindex *x, uint64_t h, size_t pos)
{
	if ((x->n + 1) * 2 > x->cap) {
		size_t cap = x->cap ? x->cap * 2 : 64;
		size_t *slot = calloc(cap, sizeof(*slot));
		uint64_t *hash = calloc(cap, sizeof(*hash));

		if (!slot || !hash) {
			free(slot);
			free(hash);
			return -ENOMEM;
		}
		for (size_t i = 0; i < x->cap; i++)
			if (x->slot[i])
				put(slot, hash, cap, x->hash[i], x->slot[i]);
		free(x->slot);
		free(x->hash);
		x->slot = slot;
		x->hash = hash;
		x->cap = cap;
	}
	put(x->slot, x->hash, x->cap, h, pos + 1);
	x->n++;
	return 0;
}

void ks_strindex_free(struct ks_strindex *x)
{
	free(x->slot);
	free(x->hash);
	x->slot = NULL;
	x->hash = NULL;
	x->cap = x->n = 0;
}
