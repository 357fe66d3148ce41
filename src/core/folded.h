/* Folded stack files ("root;child;leaf COUNT" per line, as ksight profile -f folded and flamegraph.pl write them) read into one table of two sides. */
#ifndef KS_CORE_FOLDED_H
#define KS_CORE_FOLDED_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "core/strindex.h"

struct ks_fstack {
	char *stack;		/* "a;b;c" */
	uint64_t n[2];		/* its count in A and in B */
};

struct ks_folded2 {
	struct ks_fstack *v;
	size_t n, cap;
	uint64_t total[2];
	struct ks_strindex idx; /* stacks by name, while loading */
};

/* Whether @file reads as folded stacks (its first line "FRAMES COUNT"). */
int ks_folded_sniff(const char *file);
/* Adds @file's stacks as side @side (0 A, 1 B): 0, or -errno / -EBADMSG with a one-line reason in @err. */
int ks_folded_load(struct ks_folded2 *f, int side, const char *file, char *err, size_t errlen);
/* The same from @in (left open), named @file in errors (record --profile's stacks rendered folded). */
int ks_folded_read(struct ks_folded2 *f, int side, FILE *in, const char *file, char *err, size_t errlen);
/* Sorts the stacks by name (a flame graph's order). */
void ks_folded_sort(struct ks_folded2 *f);
void ks_folded_free(struct ks_folded2 *f);

#endif
