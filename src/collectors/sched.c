/* The scheduler collectors' shared user side: how rows are laid out in the maps, drained, and named. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/utsname.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "collectors/sched.h"
#include "core/bpfutil.h"
#include "core/cgroup.h"
#include "core/loader.h"
#include "core/log.h"

/* Hash rows are per-CPU with a histogram each (~8 KiB a CPU) and preallocated: cap their memory, not just their count. */
#define SCHED_HASH_ROWS 8192
#define SCHED_HASH_BUDGET (64ull << 20)
#define SCHED_SLOT_CAP (1u << 22)

enum ks_sched_by ks_sched_by_parse(const char *by)
{
	static const char *const names[] = {
		[KS_SCHED_BY_CPU] = "cpu",	 [KS_SCHED_BY_PRIO] = "prio", [KS_SCHED_BY_POLICY] = "policy",
		[KS_SCHED_BY_PID] = "pid",	 [KS_SCHED_BY_TID] = "tid",   [KS_SCHED_BY_COMM] = "comm",
		[KS_SCHED_BY_CGROUP] = "cgroup",
	};

	for (size_t i = 1; by && i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(by, names[i]))
			return (enum ks_sched_by)i;
	return KS_SCHED_BY_NONE;
}

static bool by_hash(enum ks_sched_by by)
{
	return by >= KS_SCHED_BY_PID;
}

/* Must agree with ks_array_keys() in bpf/sched.bpf.h. */
static uint32_t array_keys(enum ks_sched_by by)
{
	if (by == KS_SCHED_BY_PRIO)
		return KS_SCHED_PRIOS;
	if (by == KS_SCHED_BY_POLICY)
		return KS_SCHED_POLICIES;
	return 1;
}

void ks_sched_sizes(enum ks_sched_by by, uint32_t nsub, size_t value_size, struct ks_sched_sizes *sz)
{
	uint64_t per_row = (uint64_t)value_size * (uint64_t)ks_ncpus();
	uint64_t hrows = SCHED_HASH_BUDGET / (per_row ? per_row : 1);

	if (hrows > SCHED_HASH_ROWS * 2)
		hrows = SCHED_HASH_ROWS * 2;
	if (hrows < 64)
		hrows = 64;
	sz->slots = ks_pow2_at_least(ks_pid_max(), SCHED_SLOT_CAP);
	sz->rows = by_hash(by) ? 1 : 2 * array_keys(by) * nsub;
	sz->hrows = by_hash(by) ? (uint32_t)hrows : 1;
}

struct array_arg {
	const struct ks_sched_maps *m;
	unsigned int gen;
	ks_sched_row_fn fn;
	void *arg;
};

static int take_array(uint32_t idx, const void *value, void *varg)
{
	struct array_arg *a = varg;
	const struct ks_sched_maps *m = a->m;
	uint32_t rel = idx - a->gen * array_keys(m->by) * m->nsub;
	struct ks_sched_rowid id = { .sub = rel % m->nsub, .num = rel / m->nsub };
	int took = 0;

	if (m->by == KS_SCHED_BY_PRIO && id.num == KS_SCHED_PRIOS - 1)
		id.num = -1; /* deadline, or a priority outside 0..139 */
	if (m->by != KS_SCHED_BY_CPU)
		return a->fn(&id, value, ks_ncpus(), a->arg);
	/* by cpu, each CPU's copy of the one row is that CPU's row */
	for (int cpu = 0; cpu < ks_ncpus(); cpu++) {
		int t;

		id.num = cpu;
		t = a->fn(&id, (const char *)value + (size_t)cpu * m->value_size, 1, a->arg);
		if (t < 0)
			return t;
		took |= t;
	}
	return took;
}

struct hash_arg {
	unsigned int gen;
	ks_sched_row_fn fn;
	void *arg;
};

static bool key_in_gen(const void *key, void *varg)
{
	return ((const struct ks_sched_key *)key)->gen == ((struct hash_arg *)varg)->gen;
}

static int take_hash(const void *key, const void *value, void *varg)
{
	const struct ks_sched_key *k = key;
	struct hash_arg *a = varg;
	struct ks_sched_rowid id = { .sub = k->sub, .num = (int64_t)k->id };
	int took;

	memcpy(id.comm, k->comm, KS_COMM_LEN);
	id.comm[KS_COMM_LEN - 1] = 0;
	took = a->fn(&id, value, ks_ncpus(), a->arg);
	return took < 0 ? took : 0;
}

int ks_sched_drain(const struct ks_sched_maps *m, unsigned int gen, ks_sched_row_fn fn, void *arg)
{
	if (by_hash(m->by)) {
		struct hash_arg a = { gen, fn, arg };

		return ks_hash_drain(m->hrows_fd, sizeof(struct ks_sched_key), key_in_gen, take_hash, &a, m->vbuf);
	} else {
		struct array_arg a = { m, gen, fn, arg };
		uint32_t n = array_keys(m->by) * m->nsub;

		return ks_array_drain(m->rows_fd, gen * n, n, m->vbuf, m->value_size * (size_t)ks_ncpus(),
				      take_array, &a);
	}
}

static const char *policy_name(int64_t p)
{
	static const char *const names[KS_SCHED_POLICIES] = {
		"normal", "fifo", "rr", "batch", "iso", "idle", "deadline", "ext",
	};

	return p >= 0 && p < KS_SCHED_POLICIES ? names[p] : "?";
}

/* The scheduling class behind a policy: the CFS/RT/DEADLINE/IDLE split. */
static const char *policy_class(int64_t p)
{
	switch (p) {
	case 1:
	case 2:
		return "rt";
	case 5:
		return "idle";
	case 6:
		return "dl";
	case 7:
		return "ext";
	default:
		return "cfs";
	}
}

void ks_sched_label(struct ks_row *row, enum ks_sched_by by, const struct ks_sched_rowid *id)
{
	char path[256];

	switch (by) {
	case KS_SCHED_BY_NONE:
		break;
	case KS_SCHED_BY_CPU:
		ks_row_key_num(row, "cpu", id->num);
		break;
	case KS_SCHED_BY_PRIO:
		ks_row_key_num(row, "prio", id->num);
		ks_row_key_str(row, "class", id->num < 0 ? "dl" : id->num < 100 ? "rt" : "cfs");
		break;
	case KS_SCHED_BY_POLICY:
		ks_row_key_str(row, "policy", policy_name(id->num));
		ks_row_key_str(row, "class", policy_class(id->num));
		break;
	case KS_SCHED_BY_PID:
	case KS_SCHED_BY_TID:
		ks_row_key_num(row, by == KS_SCHED_BY_PID ? "pid" : "tid", id->num);
		ks_row_key_str(row, "comm", id->comm);
		break;
	case KS_SCHED_BY_COMM:
		ks_row_key_str(row, "comm", id->comm);
		break;
	case KS_SCHED_BY_CGROUP:
		ks_row_key_num(row, "cgroup_id", id->num);
		if (ks_cgroup_path((__u64)id->num, path, sizeof(path)))
			snprintf(path, sizeof(path), "?");
		ks_row_key_str(row, "cgroup", path);
		break;
	}
}

bool ks_sched_switch_has_state(void)
{
	int n = ks_tp_nargs("sched_switch");

	if (n < 0)
		p_dbg("cannot count sched_switch arguments: %s; assuming prev_state is one", strerror(-n));
	return n < 0 || n >= 4;
}

/*
 * Commit d6962c4fe8f9 ("sched: Clear ttwu_pending after enqueue_task()",
 * v6.2) moved the clearing after the activations.  The kernel's behaviour
 * changed, not its types, so the release is all there is to go by; an
 * unreadable one gets sched_waking, which is right on every kernel.
 */
bool ks_sched_wakelist_marked(void)
{
	unsigned int major, minor;
	struct utsname u;

	if (uname(&u) || sscanf(u.release, "%u.%u", &major, &minor) != 2)
		return false;
	return major > 6 || (major == 6 && minor >= 2);
}

const char *const ks_sched_hooks[] = { KS_HOOK_TP_BTF, KS_HOOK_RAW_TP, NULL };

int ks_sched_run_init(struct ks_sched_run *run, const struct ks_common *c, const struct ks_filter *f,
		      uint32_t nsub, size_t value_size, const char *hist_name)
{
	run->by = ks_sched_by_parse(c->by);
	run->hist_name = hist_name;
	run->filter = f;
	ks_sched_sizes(run->by, nsub, value_size, &run->sizes);
	run->maps.by = run->by;
	run->maps.nsub = nsub;
	run->maps.value_size = value_size;
	run->maps.vbuf = calloc((size_t)ks_ncpus(), value_size);
	return run->maps.vbuf ? 0 : -ENOMEM;
}

void ks_sched_attached(struct ks_sched_run *run, struct bpf_object *obj, const struct bpf_map *rows,
		       const struct bpf_map *hrows)
{
	run->obj = obj;
	run->maps.rows_fd = bpf_map__fd(rows);
	run->maps.hrows_fd = bpf_map__fd(hrows);
}

int ks_sched_collect(struct ks_sched_run *run, volatile uint32_t *bss_gen, const volatile struct ks_sched_lost *lost,
		     struct ks_report *r, ks_sched_row_fn fn, void *arg)
{
	unsigned int old = ks_gen_flip(&run->gen, bss_gen);
	struct ks_sched_lost now;
	unsigned long long missed;
	int err;

	if (run->hist_name)
		r->hist_name = run->hist_name;
	err = ks_sched_drain(&run->maps, old, fn, arg);
	if (err)
		return err;
	now.slot_collisions = lost->slot_collisions;
	now.map_full = lost->map_full;
	missed = ks_obj_missed(run->obj);
	ks_report_lost(r, "slot_collisions", now.slot_collisions - run->lost_seen.slot_collisions);
	ks_report_lost(r, "map_full", now.map_full - run->lost_seen.map_full);
	ks_report_lost(r, "recursion", missed - run->missed_seen);
	run->lost_seen = now;
	run->missed_seen = missed;
	return 0;
}

void ks_sched_run_free(struct ks_sched_run *run)
{
	free(run->maps.vbuf);
	run->maps.vbuf = NULL;
	run->obj = NULL;
}
