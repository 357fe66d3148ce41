/* The memory budget: every collector sizes its BPF maps from one byte budget, counted at the possible-CPU count. */
#ifndef KS_CORE_BUDGET_H
#define KS_CORE_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bpf_object;
struct bpf_map;
struct ks_report;
struct ks_json;
struct ks_common;

/* --max-memory's default: every map of one collector instance, worst case, at the possible-CPU count. */
#define KS_BUDGET_DEFAULT (64ull << 20)
#define KS_BUDGET_MAPS 24

/* One map's cost as the loader will create it. */
struct ks_map_cost {
	char name[32];
	uint32_t type, key_size, value_size, max_entries, flags;
	bool percpu;	  /* value stored once per possible CPU */
	bool prealloc;	  /* all of it allocated at load (arrays, preallocated hashes) */
	uint64_t bytes;	  /* worst case: every entry present */
};

/*
 * One part of a budget several instances share (serve, run): --max-memory
 * is the whole process's, each instance gets a share of it
 * (ks_budget_split) and its maps must fit that share.
 */
struct ks_budget_share {
	uint64_t bytes;	  /* this part; 0: not split yet */
	bool measure;	  /* size the maps twice to fill min and wish, load nothing (the open returns -EALREADY) */
	uint64_t min;	  /* the maps sized from the smallest budget (KS_BUDGET_FLOOR): what it cannot go below */
	uint64_t wish;	  /* the maps sized from the whole budget: what it takes alone */
	const char *name; /* for the refusal: the collector's name */
};

/* The smallest budget a collector sizes from (--max-memory's least). */
#define KS_BUDGET_FLOOR (1ull << 20)

struct ks_budget {
	uint64_t limit;	   /* bytes the maps are sized from; 0 means KS_BUDGET_DEFAULT */
	struct ks_budget_share *share; /* a shared budget: the maps must fit share->bytes (limit: what ks_budget_fit chose) */
	uint64_t whole;	   /* with a share: the process's --max-memory */
	int ncpus;	   /* possible CPUs (per-CPU values are laid out for all of them) */
	int nmaps;
	struct ks_map_cost maps[KS_BUDGET_MAPS];
	uint64_t total;	   /* sum of maps[].bytes */
	uint64_t prealloc; /* the part allocated at load */
};

/* Sets the limit (0: default) and reads the possible-CPU count (KSIGHT_BUDGET_CPUS=N counts N, for tests). */
void ks_budget_init(struct ks_budget *b, uint64_t limit);
/* ks_budget_init with @c's --max-memory and, under serve or run, its instance's share. */
void ks_budget_init_for(struct ks_budget *b, const struct ks_common *c);
/* What the maps must fit: the instance's share when the budget is shared, else the limit. */
uint64_t ks_budget_cap(const struct ks_budget *b);

/*
 * Bytes a map of this shape may take in the kernel when full: entries x
 * (key + value, each rounded to 8) x possible CPUs for per-CPU values, plus
 * for hash maps the kernel's per-element header (struct htab_elem), the
 * bucket array (16 bytes x entries rounded up to a power of two) and a
 * preallocated plain hash's spare element per CPU, and a page for ring
 * buffers' headers.  An upper bound, close to what /proc/PID/fdinfo's
 * memlock shows.
 */
uint64_t ks_map_bytes(uint32_t type, uint32_t key_size, uint32_t value_size, uint32_t max_entries,
		      uint32_t flags, int ncpus);

/*
 * How many rows of @row_bytes each (already multiplied by the CPU count
 * for per-CPU rows: see ks_budget_row_bytes) fit in @share of the budget
 * (a fraction in (0, 1]), clamped to [@min, @max]; a power of two when
 * @pow2.  Collectors call it before load to set max_entries.
 */
uint32_t ks_budget_rows(const struct ks_budget *b, double share, uint64_t row_bytes, uint32_t min,
			uint32_t max, bool pow2);
/* The bytes one entry of a map of this shape costs (ks_map_bytes for max_entries 1). */
uint64_t ks_budget_row_bytes(const struct ks_budget *b, uint32_t type, uint32_t key_size,
			     uint32_t value_size, uint32_t flags);

/*
 * Call between bpf_object__open and bpf_object__load: records every map
 * that will be created (autocreate on, as sized now) and checks the total.
 * Over the limit: p_err naming the largest map and the budget, -E2BIG;
 * nothing is loaded.  Maps already accounted (same name) are replaced, so
 * a retry with another hook variant may call it again.
 */
int ks_budget_check(struct ks_budget *b, struct bpf_object *obj);
/* ks_budget_check's accounting without the check: fills maps[], total and prealloc. */
int ks_budget_measure(struct ks_budget *b, struct bpf_object *obj);

/*
 * Sizes @obj's maps for a shared budget: @size(@arg) sets the map sizes
 * from b->limit, and this calls it at several limits.  Without a share:
 * once, at the limit.  With share->measure: at KS_BUDGET_FLOOR and at the
 * whole budget, fills share->min and share->wish and returns -EALREADY
 * (nothing is to be loaded).  Otherwise the largest limit (to 1/64 of a
 * MiB) whose maps fit share->bytes, or the floor when none does (the check
 * then refuses); returns 0 or @size's error.
 */
int ks_budget_fit(struct ks_budget *b, struct bpf_object *obj, int (*size)(void *arg), void *arg);

/*
 * Splits @whole between the @n parts, whose min and wish are measured: the
 * minimums first, then what is left in proportion to what each wishes
 * beyond its minimum (each its wish when all fit).  -E2BIG when the
 * minimums alone are over @whole (nothing is set); 0 otherwise.
 */
int ks_budget_split(struct ks_budget_share *const *parts, int n, uint64_t whole);
/* The one line that says why ks_budget_split refused, into @buf. */
void ks_budget_split_error(struct ks_budget_share *const *parts, int n, uint64_t whole, int ncpus, char *buf,
			   size_t len);

/* Adds the budget to a report: JSON "maps" {budget, possible_cpus, total, allocated, by_map[]}. */
void ks_budget_report(const struct ks_budget *b, struct ks_report *r);
/* The "maps" object of a JSON report. */
void ks_budget_write_json(const struct ks_budget *b, struct ks_json *j);
/* One line per map to stderr (for -v): name, type, entries, bytes, per-CPU, preallocated. */
void ks_budget_print(const struct ks_budget *b, const char *who);

#endif
