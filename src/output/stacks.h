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

/*
 * pprof's view of the same samples, by address (made only when asked:
 * ks_stacks_by_address): mappings as the processes' maps gave them,
 * locations (an address and its source lines, innermost first) and
 * samples with their process and thread.  Frame ids name the functions.
 */
struct ks_smapping {
	uint64_t start, limit, offset;
	char *file, *build_id; /* build_id: hex, "" for none */
};
struct ks_sline {
	uint32_t frame; /* frame id: the function's name and kind */
	int32_t line;	/* 0: unknown */
	char *file;	/* NULL: unknown */
};
struct ks_sloc {
	uint32_t mapping; /* index + 1; 0: in no mapping known */
	uint32_t nlines;
	uint64_t addr;
	struct ks_sline *lines;
};
struct ks_ssample {
	uint32_t n, pid, tid, comm; /* comm: its frame id (KS_FK_COMM) + 1; 0: none */
	uint32_t *locs;		    /* location indexes, root first as stacks are */
	uint64_t value;
};
struct ks_addr_view {
	struct ks_smapping *maps;
	size_t nmaps, capmaps, mhash_cap;
	uint32_t *mhash;
	struct ks_sloc *locs;
	size_t nlocs, caplocs, lhash_cap;
	uint32_t *lhash;
	struct ks_ssample *s;
	size_t n, cap, shash_cap;
	uint32_t *shash;
};

struct ks_stacks {
	const char *sample_type; /* pprof sample type: "samples", "offcpu" */
	const char *unit;	 /* its unit: "count", "nanoseconds" */
	uint64_t period_ns;	 /* pprof: nanoseconds one sample stands for (0: none) */
	uint64_t time_ns, duration_ns; /* pprof: when the profile began (CLOCK_REALTIME) and how long it ran (0: unknown) */
	struct ks_addr_view *av;	 /* NULL: no address view (see ks_stacks_by_address) */
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
/* Makes the address view (pprof's) beside the named stacks: 0 or -ENOMEM. */
int ks_stacks_by_address(struct ks_stacks *st);
void ks_addr_view_free(struct ks_addr_view *av);
/* The index + 1 of mapping @m in the address view, added (copied) when new; negative errno. */
int64_t ks_stacks_mapping(struct ks_stacks *st, const struct ks_smapping *m);
/* The index of the location (@mapping: index + 1 or 0, @addr, @lines[0..n) innermost first), added (copied) when new; negative errno. */
int64_t ks_stacks_location(struct ks_stacks *st, uint32_t mapping, uint64_t addr, const struct ks_sline *lines, uint32_t n);
/* Adds @value to the sample of locations @locs[0..n) (root first) of thread @tid of @pid named @comm; 0 or -ENOMEM. */
int ks_stacks_add_sample(struct ks_stacks *st, const uint32_t *locs, uint32_t n, uint32_t pid, uint32_t tid, uint32_t comm,
			 uint64_t value);
/* Orders the stacks by their frame names, root first (a flame graph's and folded output's order). */
void ks_stacks_sort(struct ks_stacks *st);

/* The stack writers (entries of ks_writers, output/output.h). */
/* "comm;frame;...;frame value" per stack, kernel frames "_[k]", JIT "_[j]", inlined "_[i]" (flamegraph.pl's input). */
int ks_write_folded(const struct ks_stacks *st, FILE *out);
/* A self-contained interactive SVG flame graph (search, click to zoom). */
int ks_write_svg(const struct ks_stacks *st, FILE *out);
/* How ks_write_svg_opt draws; all zero: as ks_write_svg. */
struct ks_svg_opts {
	/* frames narrower than this many pixels of the graph's width are left out (flamegraph.pl's --minwidth), their
	 * count and share said under the graph: a page of a long session otherwise holds tens of thousands of frames no
	 * one can see; 0: every frame */
	double min_px;
	/* for a place that runs no script (report --html's page, its CSP forbids it): no script, and none of the
	 * controls only script works (Reset zoom, Search, its box, the matched share), which would sit there dead */
	int no_script;
};
int ks_write_svg_opt(const struct ks_stacks *st, FILE *out, const struct ks_svg_opts *o);
/* A gzip'd profile.proto (pprof) profile. */
int ks_write_pprof(const struct ks_stacks *st, FILE *out);
/* The name of @id as folded output writes it (with its kind's suffix) into @buf. */
const char *ks_stacks_frame_text(const struct ks_stacks *st, uint32_t id, char *buf, size_t len);

#endif
