/* The stack-profile model (counted stacks of interned frames) and its writers: folded, SVG flame graph, pprof. */
#ifndef KS_OUTPUT_STACKS_H
#define KS_OUTPUT_STACKS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum ks_frame_kind {
	KS_FK_COMM = 0,	  /* the process name, the root of every stack */
	KS_FK_USER = 1,
	KS_FK_KERNEL = 2, /* folded: "name_[k]" */
	KS_FK_JIT = 3,	  /* folded: "name_[j]" */
	KS_FK_INLINE = 4, /* a call the compiler inlined (user code, from DWARF); folded: "name_[i]" */
};

/* One distinct stack, frames root first, with its summed value. */
struct ks_stack {
	uint32_t n;
	uint32_t *frames; /* frame ids */
	uint64_t value;
};

struct ks_stacks {
	const char *sample_type; /* pprof sample type: "samples", "offcpu" */
	const char *unit;	 /* its unit: "count", "nanoseconds" */
	uint64_t period_ns;	 /* pprof: nanoseconds one sample stands for (0: none) */
	uint64_t total;
	/* interned frames: name and kind by id */
	char **names;
	uint8_t *kinds;
	size_t nnames, capnames;
	uint32_t *fhash; /* id + 1, open addressing */
	size_t fhash_cap;
	struct ks_stack *s;
	size_t n, cap;
	uint32_t *shash; /* index + 1 */
	size_t shash_cap;
};

void ks_stacks_init(struct ks_stacks *st, const char *sample_type, const char *unit, uint64_t period_ns);
void ks_stacks_free(struct ks_stacks *st);
/* The id of frame (@name, @kind), added when new; negative errno. */
int64_t ks_stacks_frame(struct ks_stacks *st, const char *name, enum ks_frame_kind kind);
/* Adds @value to the stack @frames[0..n) (root first), merging equal stacks; 0 or -ENOMEM. */
int ks_stacks_add(struct ks_stacks *st, const uint32_t *frames, uint32_t n, uint64_t value);
/* Orders the stacks by their frame names, root first (a flame graph's and folded output's order). */
void ks_stacks_sort(struct ks_stacks *st);

/* The stack writers (entries of ks_writers, output/output.h). */
/* "comm;frame;...;frame value" per stack, kernel frames "_[k]", JIT "_[j]", inlined "_[i]" (flamegraph.pl's input). */
int ks_write_folded(const struct ks_stacks *st, FILE *out);
/* A self-contained interactive SVG flame graph (search, click to zoom). */
int ks_write_svg(const struct ks_stacks *st, FILE *out);
/* A gzip'd profile.proto (pprof) profile. */
int ks_write_pprof(const struct ks_stacks *st, FILE *out);
/* The name of @id as folded output writes it (with its kind's suffix) into @buf. */
const char *ks_stacks_frame_text(const struct ks_stacks *st, uint32_t id, char *buf, size_t len);

#endif
