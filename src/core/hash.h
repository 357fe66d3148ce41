/* FNV-1a, the one 64-bit hash of ksight's user side: short keys, names and frame lists that must meet when equal. */
#ifndef KS_CORE_HASH_H
#define KS_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define KS_FNV1A_INIT 0xcbf29ce484222325ull

/* @h (KS_FNV1A_INIT to begin) continued over the @n bytes at @p. */
static inline uint64_t ks_fnv1a(const void *p, size_t n, uint64_t h)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

#endif
