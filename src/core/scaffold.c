/* The collector scaffold: open with hook choice and budget, adoption of pinned programs, mark, drain of the row maps, losses, close. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "core/log.h"
#include "core/pin.h"
#include "core/scaffold.h"
#include "core/tracefs.h"

static int run_probes(struct ks_scaffold *sc, const struct ks_sc_def *def)
{
	if (def->nprobes > KS_SC_PROBES_MAX)
		return -E2BIG;
	for (int i = 0; i < def->nprobes; i++) {
		const struct ks_sc_probe *p = &def->probes[i];
		int v = 0;

		switch (p->kind) {
		case KS_SC_TP_NEEDED:
		case KS_SC_TP:
			v = ks_tracepoint_exists(p->a, p->b);
			break;
		case KS_SC_TP_NARGS:
			v = ks_tp_nargs(p->a);
			break;
		case KS_SC_TP_ARG_PTR:
			v = ks_tp_arg_is_ptr(p->a, p->idx);
			break;
		case KS_SC_BTF_MEMBER:
			v = ks_btf_has_member(p->a, p->b);
			break;
		}
		/* a needed tracepoint that cannot be looked up is left to the load to explain */
		if (p->kind == KS_SC_TP_NEEDED && v == 0) {
			p_err("%s: tracepoint %s:%s is not in this kernel", def->name, p->a, p->b);
			return -ENOENT;
		}
		sc->probed[i] = v;
	}
	return 0;
}

/* ks_load_spec's callbacks: the context starts with its scaffold */
static struct ks_budget *budget_of(void *ctx)
{
	return &((struct ks_scaffold *)ctx)->budget;
}

static int budget_check(void *ctx, struct bpf_object *obj)
{
	return ks_budget_check(&((struct ks_scaffold *)ctx)->budget, obj);
}

/* The value buffers every map's drain reads into: as large as the largest value (all CPUs' copies). */
static int alloc_buffers(struct ks_scaffold *sc, const struct ks_sc_def *def)
{
	size_t size = 8;

	for (int i = 0; i < def->nmaps; i++) {
		const struct ks_sc_map *m = &def->maps[i];
		size_t v = m->value_size * (m->percpu ? (size_t)ks_ncpus() : 1);

		if (v > size)
			size = v;
	}
	sc->vbuf = calloc(1, size);
	sc->zero = calloc(1, size);
	return sc->vbuf && sc->zero ? 0 : -ENOMEM;
}

/* After the load: the .bss the counters and the half index live in, and each map's fd. */
static int find_objects(struct ks_scaffold *sc, const struct ks_sc_def *def)
{
	struct bpf_object *obj = def->skel->obj(sc->skel);
	struct bpf_map *bss = bpf_object__find_map_by_name(obj, ".bss");
	size_t size = 0;

	/* the skeleton's own bss pointer: the map's mmap once loaded (libbpf types it const) */
	sc->bss = bss ? (void *)bpf_map__initial_value(bss, &size) : NULL;
	if (!sc->bss || size < def->gen_at + sizeof(uint32_t))
		return -ENOENT;
	for (int i = 0; i < def->nmaps; i++) {
		struct bpf_map *m;

		if (def->maps[i].drain)
			continue;
		m = bpf_object__find_map_by_name(obj, def->maps[i].name);
		sc->fd[i] = m ? bpf_map__fd(m) : -1;
		if (sc->fd[i] < 0)
			return -ENOENT;
	}
	return 0;
}

static uint64_t counter_now(const struct ks_scaffold *sc, int i)
{
	return *(volatile uint64_t *)ks_sc_bss(sc, sc->def->counters[i].bss_at);
}

int ks_sc_open(struct ks_scaffold *sc, const struct ks_sc_def *def, const struct ks_common *c)
{
	struct ks_load_spec spec = {
		.hooks = sc->hooks ? sc->hooks : def->hooks, .skel = def->skel, .configure = def->configure,
		.budget_check = budget_check, .budget = budget_of, .loaded = def->loaded,
		.programs = def->programs, .attach = def->attach, .pin = def->pin,
	};
	struct bpf_object *obj;
	int err;

	sc->def = def;
	if (def->nmaps > KS_SC_MAPS_MAX || def->ncounters > KS_SC_COUNTERS_MAX)
		return -E2BIG;
	err = run_probes(sc, def);
	if (!err && def->probed)
		err = def->probed(sc);
	if (err)
		return err;
	ks_budget_init_for(&sc->budget, c);
	err = alloc_buffers(sc, def);
	if (!err)
		err = ks_load_spec(&spec, sc, &sc->skel, &sc->hook);
	if (!err)
		err = find_objects(sc, def);
	if (!err && def->attached)
		err = def->attached(sc);
	if (err)
		return err;
	if (ks_verbose)
		ks_budget_print(&sc->budget, def->name);
	obj = def->skel->obj(sc->skel);
	if (ks_pin_adopted(obj)) {
		/* adopted programs kept counting: report from where they are, not from zero */
		sc->gen = *(volatile uint32_t *)ks_sc_bss(sc, def->gen_at) & 1;
		sc->old = sc->gen ^ 1; /* what a KS_DRAIN_CLEAR empties */
		/* losses from the programs' load on: serve takes off what its saved totals hold (ks_report_lost_less) */
		for (int i = 0; i < def->ncounters; i++)
			if (def->counters[i].kind == KS_SC_COUNTER)
				sc->seen[i] = counter_now(sc, i);
	}
	return 0;
}

const char *ks_sc_hook(void *ctx)
{
	return ((struct ks_scaffold *)ctx)->hook;
}

/* Phase one (core/instance.h): flip the halves; the driver waits for the kernel once for every instance. */
int ks_sc_mark(void *ctx)
{
	struct ks_scaffold *sc = ctx;

	sc->old = ks_gen_mark(&sc->gen, (volatile uint32_t *)ks_sc_bss(sc, sc->def->gen_at));
	return 0;
}

bool ks_sc_key_in_gen(const void *key, void *arg)
{
	return *(const uint32_t *)key == ((struct ks_sc_drain *)arg)->gen;
}

static void report_counters(struct ks_scaffold *sc, struct ks_report *r)
{
	const struct ks_sc_def *def = sc->def;

	for (int i = 0; i < def->ncounters; i++) {
		const struct ks_sc_counter *k = &def->counters[i];
		uint64_t now = k->kind == KS_SC_RECURSION ? 0 : counter_now(sc, i);

		sc->delta[i] = now - sc->seen[i];
		sc->seen[i] = now;
		switch (k->kind) {
		case KS_SC_LOSS:
			ks_report_lost(r, k->name, sc->delta[i]);
			break;
		case KS_SC_RECURSION:
			now = ks_obj_missed(def->skel->obj(sc->skel)) + (def->missed ? def->missed(sc) : 0);
			sc->delta[i] = now - sc->missed_seen;
			sc->missed_seen = now;
			ks_report_lost(r, k->name, sc->delta[i]);
			break;
		case KS_SC_COUNTER:
			ks_report_counter(r, k->name, sc->delta[i]);
			break;
		case KS_SC_SOME:
			if (sc->delta[i])
				ks_report_counter(r, k->name, sc->delta[i]);
			break;
		}
	}
}

/* Phase two: the retired half is quiet now; move it into @r (or one of the two, in @mode). */
int ks_sc_drain(struct ks_scaffold *sc, struct ks_report *r, enum ks_drain_mode mode)
{
	const struct ks_sc_def *def = sc->def;
	struct ks_sc_drain a = { sc, mode == KS_DRAIN_CLEAR ? NULL : r, sc->old };
	int err = 0;

	for (int i = 0; i < def->nmaps && !err; i++) {
		const struct ks_sc_map *m = &def->maps[i];

		if (m->drain) {
			err = m->drain(sc, a.r, sc->old, mode);
		} else if (m->take_elem) {
			err = ks_array_drain_mode(sc->fd[i], sc->old, 1, sc->vbuf,
						  m->value_size * (m->percpu ? (size_t)ks_ncpus() : 1), m->take_elem, &a,
						  mode);
		} else {
			struct ks_hash_half h = { .fd = sc->fd[i], .key_size = m->key_size, .match = ks_sc_key_in_gen,
						  .cb = m->take, .keep = m->keep, .zero = sc->zero, .arg = &a,
						  .value_buf = sc->vbuf };

			err = ks_hash_drain_half(&h, mode);
		}
	}
	if (err || mode == KS_DRAIN_CLEAR)
		return err;
	ks_budget_report(&sc->budget, r);
	report_counters(sc, r);
	return 0;
}

void ks_sc_close(void *ctx)
{
	struct ks_scaffold *sc = ctx;

	if (!sc->def)
		return;
	if (sc->def->release)
		sc->def->release(ctx);
	if (sc->skel)
		sc->def->skel->destroy(sc->skel);
	sc->skel = NULL;
	free(sc->vbuf);
	free(sc->zero);
	sc->vbuf = sc->zero = NULL;
}

struct ks_hist *ks_hist_of_u32(const uint32_t *slots, unsigned int n, uint64_t sum, uint64_t max)
{
	struct ks_hist *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	ks_hist_add_u32(h, slots, n);
	h->sum = sum;
	h->max = max;
	return h;
}

void ks_hist_add_u32(struct ks_hist *h, const uint32_t *slots, unsigned int n)
{
	for (unsigned int i = 0; i < n && i < KS_HIST_SLOTS; i++) {
		h->slots[i] += slots[i];
		h->count += slots[i];
	}
}

int ks_sc_set_rodata(struct bpf_object *obj, const char *name, const void *val, size_t size)
{
	struct bpf_map *map = bpf_object__find_map_by_name(obj, ".rodata");
	struct btf *btf = bpf_object__btf(obj);
	const struct btf_var_secinfo *v;
	const struct btf_type *sec;
	size_t len = 0;
	char *data;
	int id;

	if (!map || !btf)
		return -ENOENT;
	/* writable until load: the buffer libbpf copies into the map */
	data = (char *)bpf_map__initial_value(map, &len);
	id = btf__find_by_name_kind(btf, ".rodata", BTF_KIND_DATASEC);
	if (!data || id < 0)
		return -ENOENT;
	sec = btf__type_by_id(btf, id);
	v = btf_var_secinfos(sec);
	for (int i = 0; i < btf_vlen(sec); i++, v++) {
		const struct btf_type *var = btf__type_by_id(btf, v->type);

		if (strcmp(btf__name_by_offset(btf, var->name_off), name))
			continue;
		if (v->size != size || v->offset + size > len)
			return -ENOENT;
		memcpy(data + v->offset, val, size);
		return 0;
	}
	return -ENOENT;
}
