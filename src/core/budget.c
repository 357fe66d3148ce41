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

uint64_t ks_map_bytes(uint32_t type, uint32_t key_size, uint32_t value_size, uint32_t max_entries,
		      uint32_t flags, int ncpus)
{
	uint64_t n = max_entries, cpus = ncpus > 0 ? (uint64_t)ncpus : 1;
	uint64_t v = R8(value_size);

	(void)flags;
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
			return n * (elem + 8 + v * cpus);
		return n * (elem + v);
	}
	/* storage maps and the rest: an element header and the value */
	return n * (HTAB_ELEM_HDR + R8(key_size) + v);
}

uint64_t ks_budget_row_bytes(const struct ks_budget *b, uint32_t type, uint32_t key_size,
			     uint32_t value_size, uint32_t flags)
{
	return ks_map_bytes(type, key_size, value_size, 1, flags, b->ncpus);
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

int ks_budget_check(struct ks_budget *b, struct bpf_object *obj)
{
	const struct ks_map_cost *big = NULL;
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
		if (!big || b->maps[i].bytes > big->bytes)
			big = &b->maps[i];
	}
	if (b->total > b->limit) {
		p_err("maps need %.1f MiB at %d possible CPUs (largest: %s, %.1f MiB), over the memory budget of %.1f MiB; "
		      "raise --max-memory or choose a mode with fewer rows",
		      (double)b->total / 1048576.0, b->ncpus, big ? big->name : "?",
		      big ? (double)big->bytes / 1048576.0 : 0.0, (double)b->limit / 1048576.0);
		return -E2BIG;
	}
	return 0;
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
	ks_json_kv_u64(j, "budget", b->limit);
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
	fprintf(stderr, "ksight: %s maps at %d possible CPUs: %.2f MiB worst case, %.2f MiB at load, budget %.1f MiB\n",
		who, b->ncpus, (double)b->total / 1048576.0, (double)b->prealloc / 1048576.0,
		(double)b->limit / 1048576.0);
	for (int i = 0; i < b->nmaps; i++) {
		const struct ks_map_cost *c = &b->maps[i];

		fprintf(stderr, "ksight:   %-20s %-16s %8u x %5u+%-6u %10.3f MiB%s%s\n", c->name, type_name(c->type),
			c->max_entries, c->key_size, c->value_size, (double)c->bytes / 1048576.0,
			c->percpu ? " per-cpu" : "", c->prealloc ? " prealloc" : " on-demand");
	}
}
