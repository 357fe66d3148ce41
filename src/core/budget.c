/* The memory budget: map costs at the possible-CPU count, row counts that fit, the check before load. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include "core/bpfutil.h"
#include "core/budget.h"
#include "core/json.h"
#include "core/log.h"
#include "core/opts.h"
#include "core/report.h"

#define R8(x) (((uint64_t)(x) + 7) & ~7ull)
/* struct htab_elem before the key: list node, hash, lru/free-list links (64-bit kernels: 48 bytes) */
#define HTAB_ELEM_HDR 48

void ks_budget_init(struct ks_budget *b, uint64_t limit)
{
	memset(b, 0, sizeof(*b));
	b->limit = limit ? limit : KS_BUDGET_DEFAULT;
	b->ncpus = ks_ncpus();
	/*
	 * Tests size the maps as a 128-CPU node would (KSIGHT_BUDGET_CPUS=128):
	 * the rows chosen and the bytes reported follow it, the maps are still
	 * laid out for this machine's CPUs.  Never below the real count.
	 */
	const char *e = getenv("KSIGHT_BUDGET_CPUS");
	if (e) {
		long n = strtol(e, NULL, 10);

		if (n > b->ncpus && n <= 8192)
			b->ncpus = (int)n;
	}
}

void ks_budget_init_for(struct ks_budget *b, const struct ks_common *c)
{
	ks_budget_init(b, c->max_memory);
	if (c->share) {
		b->share = c->share;
		b->whole = b->limit;
	}
}

uint64_t ks_budget_cap(const struct ks_budget *b)
{
	return b->share && b->share->bytes ? b->share->bytes : b->limit;
}

static bool type_percpu(uint32_t type)
{
	return type == BPF_MAP_TYPE_PERCPU_ARRAY || type == BPF_MAP_TYPE_PERCPU_HASH ||
	       type == BPF_MAP_TYPE_LRU_PERCPU_HASH || type == BPF_MAP_TYPE_PERCPU_CGROUP_STORAGE;
}

static bool type_hash(uint32_t type)
{
	return type == BPF_MAP_TYPE_HASH || type == BPF_MAP_TYPE_PERCPU_HASH || type == BPF_MAP_TYPE_LRU_HASH ||
	       type == BPF_MAP_TYPE_LRU_PERCPU_HASH;
}

static bool type_prealloc(uint32_t type, uint32_t flags)
{
	if (type_hash(type))
		return type == BPF_MAP_TYPE_LRU_HASH || type == BPF_MAP_TYPE_LRU_PERCPU_HASH ||
		       !(flags & BPF_F_NO_PREALLOC);
	/* arrays (with .bss/.data/.rodata), ring buffers, perf arrays: at creation */
	return type != BPF_MAP_TYPE_TASK_STORAGE && type != BPF_MAP_TYPE_SK_STORAGE &&
	       type != BPF_MAP_TYPE_INODE_STORAGE;
}

/* A hash map's bucket array: one 16-byte bucket (list head, lock) per entry, rounded up to a power of two. */
static uint64_t hash_buckets(uint64_t n)
{
	uint64_t p = 1;

	while (p < n)
		p *= 2;
	return p * 16;
}

/* ks_map_bytes; @spares: with a preallocated plain hash's extra element per CPU (a whole map's, not a row's). */
static uint64_t map_bytes(uint32_t type, uint32_t key_size, uint32_t value_size, uint32_t max_entries,
			  uint32_t flags, int ncpus, bool spares)
{
	uint64_t n = max_entries, cpus = ncpus > 0 ? (uint64_t)ncpus : 1;
	uint64_t v = R8(value_size);

	switch (type) {
	case BPF_MAP_TYPE_RINGBUF:
		return n + 4096;
	case BPF_MAP_TYPE_PERF_EVENT_ARRAY:
		return n * 8;
	case BPF_MAP_TYPE_ARRAY:
		return n * v;
	case BPF_MAP_TYPE_PERCPU_ARRAY:
		return n * (v * cpus + 8);
	default:
		break;
	}
	if (type_hash(type)) {
		uint64_t elem = HTAB_ELEM_HDR + R8(key_size);

		if (type_percpu(type))
			return n * (elem + 8 + v * cpus) + hash_buckets(n);
		/* a preallocated plain hash keeps one element more per CPU for updates in place */
		if (spares && type == BPF_MAP_TYPE_HASH && !(flags & BPF_F_NO_PREALLOC))
			n += cpus;
		return n * (elem + v) + hash_buckets(max_entries);
	}
	/* storage maps and the rest: an element header and the value */
	return n * (HTAB_ELEM_HDR + R8(key_size) + v);
}

uint64_t ks_map_bytes(uint32_t type, uint32_t key_size, uint32_t value_size, uint32_t max_entries,
		      uint32_t flags, int ncpus)
{
	return map_bytes(type, key_size, value_size, max_entries, flags, ncpus, true);
}

uint64_t ks_budget_row_bytes(const struct ks_budget *b, uint32_t type, uint32_t key_size,
			     uint32_t value_size, uint32_t flags)
{
	/* one row: the spare elements are the map's, once; the bucket rounds up by less than a row's 16 bytes */
	return map_bytes(type, key_size, value_size, 1, flags, b->ncpus, false);
}

uint32_t ks_budget_rows(const struct ks_budget *b, double share, uint64_t row_bytes, uint32_t min,
			uint32_t max, bool pow2)
{
	double room = (double)b->limit * (share > 0 && share <= 1 ? share : 1);
	uint64_t rows = row_bytes ? (uint64_t)(room / (double)row_bytes) : max;

	if (rows > max)
		rows = max;
	if (pow2 && rows > 1) {
		uint64_t p = 1;

		while (p * 2 <= rows)
			p *= 2;
		rows = p; /* rounded down: a power of two that still fits */
	}
	if (rows < min)
		rows = min;
	return (uint32_t)rows;
}

static struct ks_map_cost *slot_for(struct ks_budget *b, const char *name)
{
	for (int i = 0; i < b->nmaps; i++)
		if (!strcmp(b->maps[i].name, name))
			return &b->maps[i];
	if (b->nmaps == KS_BUDGET_MAPS)
		return NULL;
	return &b->maps[b->nmaps++];
}

int ks_budget_measure(struct ks_budget *b, struct bpf_object *obj)
{
	struct bpf_map *m;

	if (!b->ncpus)
		ks_budget_init(b, b->limit);
	b->nmaps = 0;
	bpf_object__for_each_map(m, obj) {
		struct ks_map_cost *c;

		if (!bpf_map__autocreate(m))
			continue;
		c = slot_for(b, bpf_map__name(m));
		if (!c)
			return -E2BIG;
		memset(c, 0, sizeof(*c));
		snprintf(c->name, sizeof(c->name), "%s", bpf_map__name(m));
		c->type = bpf_map__type(m);
		c->key_size = bpf_map__key_size(m);
		c->value_size = bpf_map__value_size(m);
		c->max_entries = bpf_map__max_entries(m);
		c->flags = bpf_map__map_flags(m);
		c->percpu = type_percpu(c->type);
		c->prealloc = type_prealloc(c->type, c->flags);
		c->bytes = ks_map_bytes(c->type, c->key_size, c->value_size, c->max_entries, c->flags, b->ncpus);
	}
	b->total = b->prealloc = 0;
	for (int i = 0; i < b->nmaps; i++) {
		b->total += b->maps[i].bytes;
		if (b->maps[i].prealloc)
			b->prealloc += b->maps[i].bytes;
	}
	return 0;
}

int ks_budget_check(struct ks_budget *b, struct bpf_object *obj)
{
	const struct ks_map_cost *big = NULL;
	uint64_t cap = ks_budget_cap(b);
	int err = ks_budget_measure(b, obj);

	if (err)
		return err;
	for (int i = 0; i < b->nmaps; i++)
		if (!big || b->maps[i].bytes > big->bytes)
			big = &b->maps[i];
	if (b->total <= cap)
		return 0;
	if (b->share && b->share->bytes)
		p_err("%s: maps need %.1f MiB at %d possible CPUs (largest: %s, %.1f MiB), over its share of %.1f MiB "
		      "of --max-memory %.1f MiB; raise --max-memory or run fewer collectors",
		      b->share->name ? b->share->name : "collector", (double)b->total / 1048576.0, b->ncpus,
		      big ? big->name : "?", big ? (double)big->bytes / 1048576.0 : 0.0, (double)cap / 1048576.0,
		      (double)b->whole / 1048576.0);
	else
		p_err("maps need %.1f MiB at %d possible CPUs (largest: %s, %.1f MiB), over the memory budget of %.1f MiB; "
		      "raise --max-memory or choose a mode with fewer rows",
		      (double)b->total / 1048576.0, b->ncpus, big ? big->name : "?",
		      big ? (double)big->bytes / 1048576.0 : 0.0, (double)cap / 1048576.0);
	return -E2BIG;
}

/* Sizes the maps from @limit and measures them. */
static int size_at(struct ks_budget *b, struct bpf_object *obj, int (*size)(void *arg), void *arg, uint64_t limit)
{
	int err;

	b->limit = limit;
	err = size(arg);
	return err ? err : ks_budget_measure(b, obj);
}

int ks_budget_fit(struct ks_budget *b, struct bpf_object *obj, int (*size)(void *arg), void *arg)
{
	struct ks_budget_share *sh = b->share;
	uint64_t whole = b->whole ? b->whole : b->limit, lo = KS_BUDGET_FLOOR, hi = whole;
	int err;

	if (!sh)
		return size(arg);
	if (sh->measure) {
		err = size_at(b, obj, size, arg, lo);
		sh->min = b->total;
		if (!err)
			err = size_at(b, obj, size, arg, whole);
		sh->wish = b->total;
		return err ? err : -EALREADY;
	}
	err = size_at(b, obj, size, arg, whole);
	if (err || b->total <= ks_budget_cap(b))
		return err;
	/*
	 * The maps grow with the limit they are sized from, by steps (rows
	 * clamped, powers of two), never shrink: bisect for the largest limit
	 * whose maps fit the share.  Some maps do not grow at all (per-CPU
	 * arrays), so the limit found may well be above the share.
	 */
	while (hi - lo > (16u << 10)) {
		uint64_t mid = lo + (hi - lo) / 2;

		err = size_at(b, obj, size, arg, mid);
		if (err)
			return err;
		if (b->total <= ks_budget_cap(b))
			lo = mid;
		else
			hi = mid;
	}
	return size_at(b, obj, size, arg, lo);
}

/* What @p takes alone, never below its minimum. */
static uint64_t wish_of(const struct ks_budget_share *p)
{
	return p->wish > p->min ? p->wish : p->min;
}

int ks_budget_split(struct ks_budget_share *const *parts, int n, uint64_t whole)
{
	uint64_t mins = 0, wishes = 0, extra = 0, left;

	for (int i = 0; i < n; i++) {
		uint64_t w = wish_of(parts[i]);

		mins += parts[i]->min;
		wishes += w;
		extra += w - parts[i]->min;
	}
	if (mins > whole)
		return -E2BIG;
	left = whole - mins;
	for (int i = 0; i < n; i++) {
		uint64_t w = wish_of(parts[i]);

		if (wishes <= whole)
			parts[i]->bytes = w;
		else	/* extra > left here: each gets less than it wishes */
			parts[i]->bytes = parts[i]->min +
					  (uint64_t)((double)left * (double)(w - parts[i]->min) / (double)extra);
		parts[i]->measure = false;
	}
	return 0;
}

void ks_budget_split_error(struct ks_budget_share *const *parts, int n, uint64_t whole, int ncpus, char *buf,
			   size_t len)
{
	uint64_t mins = 0;
	size_t k;

	for (int i = 0; i < n; i++)
		mins += parts[i]->min;
	k = (size_t)snprintf(buf, len, "--max-memory %.1f MiB is less than the %.1f MiB the collectors need at least at "
				       "%d possible CPUs (",
			     (double)whole / 1048576.0, (double)mins / 1048576.0, ncpus);
	for (int i = 0; i < n && k < len; i++)
		k += (size_t)snprintf(buf + k, len - k, "%s%s %.1f MiB", i ? ", " : "",
				      parts[i]->name ? parts[i]->name : "?", (double)parts[i]->min / 1048576.0);
	if (k < len)
		snprintf(buf + k, len - k, "); raise --max-memory or run fewer collectors");
}

void ks_budget_report(const struct ks_budget *b, struct ks_report *r)
{
	r->budget = b;
}

static const char *type_name(uint32_t type)
{
	const char *s = libbpf_bpf_map_type_str((enum bpf_map_type)type);

	return s ? s : "unknown";
}

void ks_budget_write_json(const struct ks_budget *b, struct ks_json *j)
{
	ks_json_obj_begin(j);
	ks_json_kv_u64(j, "budget", ks_budget_cap(b));
	if (b->share)
		ks_json_kv_u64(j, "process_budget", b->whole);
	ks_json_kv_u64(j, "possible_cpus", (uint64_t)b->ncpus);
	ks_json_kv_u64(j, "total", b->total);
	ks_json_kv_u64(j, "allocated", b->prealloc);
	ks_json_key(j, "by_map");
	ks_json_arr_begin(j);
	for (int i = 0; i < b->nmaps; i++) {
		const struct ks_map_cost *c = &b->maps[i];

		ks_json_obj_begin(j);
		ks_json_kv_str(j, "name", c->name);
		ks_json_kv_str(j, "type", type_name(c->type));
		ks_json_kv_u64(j, "key_size", c->key_size);
		ks_json_kv_u64(j, "value_size", c->value_size);
		ks_json_kv_u64(j, "max_entries", c->max_entries);
		ks_json_key(j, "percpu");
		ks_json_bool(j, c->percpu);
		ks_json_key(j, "preallocated");
		ks_json_bool(j, c->prealloc);
		ks_json_kv_u64(j, "bytes", c->bytes);
		ks_json_obj_end(j);
	}
	ks_json_arr_end(j);
	ks_json_obj_end(j);
}

void ks_budget_print(const struct ks_budget *b, const char *who)
{
	fprintf(stderr, "ksight: %s maps at %d possible CPUs: %.2f MiB worst case, %.2f MiB at load, budget %.1f MiB",
		who, b->ncpus, (double)b->total / 1048576.0, (double)b->prealloc / 1048576.0,
		(double)ks_budget_cap(b) / 1048576.0);
	if (b->share)
		fprintf(stderr, " (its share of --max-memory %.1f MiB)", (double)b->whole / 1048576.0);
	fputc('\n', stderr);
	for (int i = 0; i < b->nmaps; i++) {
		const struct ks_map_cost *c = &b->maps[i];

		fprintf(stderr, "ksight:   %-20s %-16s %8u x %5u+%-6u %10.3f MiB%s%s\n", c->name, type_name(c->type),
			c->max_entries, c->key_size, c->value_size, (double)c->bytes / 1048576.0,
			c->percpu ? " per-cpu" : "", c->prealloc ? " prealloc" : " on-demand");
	}
}
