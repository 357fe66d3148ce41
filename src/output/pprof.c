/* The pprof writer: profile.proto (mappings, addresses, source lines, process labels) through the shared encoder (pb.c), gzip'd with zlib. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "core/hash.h"
#include "core/sanitize.h"
#include "output/output.h"
#include "output/pb.h"
#include "output/stacks.h"

/*
 * profile.proto's string table: index 0 is "", each string once.  Every
 * string is sanitized first (profile.proto strings are UTF-8, and Go's
 * decoder checks), as every output's names are.
 */
struct strtab {
	char **s;
	size_t n, cap;
	uint32_t *h; /* index + 1, open addressing */
	size_t hcap;
	int err;
};

static uint64_t str_hash(const char *s)
{
	return ks_fnv1a(s, strlen(s), KS_FNV1A_INIT);
}

/* Doubles @t's hash table; 0 or -ENOMEM. */
static int strtab_grow(struct strtab *t)
{
	size_t cap = t->hcap ? t->hcap * 2 : 1024;
	uint32_t *h = calloc(cap, sizeof(*h));

	if (!h)
		return -ENOMEM;
	for (size_t i = 0; i < t->n; i++) {
		size_t k = str_hash(t->s[i]) & (cap - 1);

		while (h[k])
			k = (k + 1) & (cap - 1);
		h[k] = i + 1;
	}
	free(t->h);
	t->h = h;
	t->hcap = cap;
	return 0;
}

/* The index of @raw (sanitized) in @t, added when new; 0 ("") after a failure, which sticks in t->err. */
static uint64_t str_of(struct strtab *t, const char *raw)
{
	size_t len = ks_sanitized_len(raw ? raw : ""), k;
	char *b;

	if (t->err)
		return 0;
	b = malloc(len + 1);
	if (!b || ((t->n + 1) * 2 > t->hcap && strtab_grow(t)))
		goto nomem;
	ks_sanitize(raw ? raw : "", b, len + 1);
	for (k = str_hash(b) & (t->hcap - 1); t->h[k]; k = (k + 1) & (t->hcap - 1))
		if (!strcmp(t->s[t->h[k] - 1], b)) {
			free(b);
			return t->h[k] - 1;
		}
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		char **s = realloc(t->s, cap * sizeof(*s));

		if (!s)
			goto nomem;
		t->s = s;
		t->cap = cap;
	}
	t->s[t->n] = b;
	t->h[k] = ++t->n;
	return t->n - 1;
nomem:
	free(b);
	t->err = -ENOMEM;
	return 0;
}

static void strtab_free(struct strtab *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->s[i]);
	free(t->s);
	free(t->h);
}

/* pprof Functions: one per (frame, source file), ids from 1 in order of first use. */
struct functab {
	uint64_t *key; /* frame id << 32 | file's string index, by function id - 1 */
	size_t n, cap;
	uint32_t *h;
	size_t hcap;
};

static uint64_t key_hash(uint64_t k)
{
	return k * 0x9e3779b97f4a7c15ull >> 20;
}

/* The function id of @key, added when new; 0 on -ENOMEM. */
static uint64_t func_of(struct functab *f, uint64_t key)
{
	size_t k;

	if ((f->n + 1) * 2 > f->hcap) {
		size_t cap = f->hcap ? f->hcap * 2 : 1024;
		uint32_t *h = calloc(cap, sizeof(*h));

		if (!h)
			return 0;
		for (size_t i = 0; i < f->n; i++) {
			for (k = key_hash(f->key[i]) & (cap - 1); h[k]; k = (k + 1) & (cap - 1))
				;
			h[k] = i + 1;
		}
		free(f->h);
		f->h = h;
		f->hcap = cap;
	}
	for (k = key_hash(key) & (f->hcap - 1); f->h[k]; k = (k + 1) & (f->hcap - 1))
		if (f->key[f->h[k] - 1] == key)
			return f->h[k];
	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 256;
		uint64_t *n = realloc(f->key, cap * sizeof(*n));

		if (!n)
			return 0;
		f->key = n;
		f->cap = cap;
	}
	f->key[f->n] = key;
	f->h[k] = ++f->n;
	return f->n;
}

static void value_type(struct ks_pb *p, int field, uint64_t type, uint64_t unit)
{
	struct ks_pb m = { 0 };

	ks_pb_uint(&m, 1, type);
	ks_pb_uint(&m, 2, unit);
	ks_pb_msg(p, field, &m);
	ks_pb_free(&m);
}

/* A label of a sample: a string (@str) or a number (@num, when @str is 0). */
static void label(struct ks_pb *p, struct ks_pb *m, uint64_t key, uint64_t str, uint64_t num)
{
	ks_pb_uint(m, 1, key);
	if (str)
		ks_pb_uint(m, 2, str);
	else
		ks_pb_uint(m, 3, num);
	ks_pb_msg(p, 3, m);
}

/*
 * A profile without an address view (a stack model made by names only):
 * one location per frame, at no address and in no mapping, as pprof's
 * own converters write a symbolized profile without addresses.
 */
static int view_by_name(const struct ks_stacks *st, struct ks_stacks *tmp)
{
	uint32_t *locs = NULL, *lid = NULL;
	int err;

	*tmp = *st;
	tmp->av = NULL;
	err = ks_stacks_by_address(tmp);
	lid = calloc(st->nnames ? st->nnames : 1, sizeof(*lid));
	if (err || !lid)
		goto fail;
	for (size_t id = 0; id < st->nnames; id++) {
		struct ks_sline l = { .frame = (uint32_t)id };
		int64_t li = st->kinds[id] == KS_FK_COMM ? 0 : ks_stacks_location(tmp, 0, 0, &l, 1);

		if (li < 0)
			goto fail;
		lid[id] = (uint32_t)li;
	}
	for (size_t i = 0; i < st->n; i++) {
		const struct ks_stack *s = &st->s[i];
		uint32_t n = 0, comm = 0;

		free(locs);
		locs = malloc((s->n ? s->n : 1) * sizeof(*locs));
		if (!locs)
			goto fail;
		for (uint32_t j = 0; j < s->n; j++) {
			if (st->kinds[s->frames[j]] == KS_FK_COMM)
				comm = s->frames[j] + 1;
			else
				locs[n++] = lid[s->frames[j]];
		}
		if (ks_stacks_add_sample(tmp, locs, n, 0, 0, comm, s->value))
			goto fail;
	}
	free(locs);
	free(lid);
	return 0;
fail:
	free(locs);
	free(lid);
	ks_addr_view_free(tmp->av);
	tmp->av = NULL;
	return -ENOMEM;
}

/* Strings every profile has: their indexes are sx[] */
enum { S_EMPTY, S_TYPE, S_UNIT, S_CPU, S_NS, S_COMM, S_PID, S_TID, S_KERNEL, S_FIXED };

static int encode(const struct ks_stacks *st, const struct ks_addr_view *av, struct ks_pb *p)
{
	struct ks_pb m = { 0 }, packed = { 0 }, lbl = { 0 };
	const char *fixed[S_FIXED] = { "", st->sample_type, st->unit, "cpu", "nanoseconds", "comm", "pid", "tid", "[kernel]" };
	struct strtab t = { 0 };
	struct functab ft = { 0 };
	bool has_ns = st->period_ns > 0;
	uint8_t *mflags = NULL;
	int err = 0;

	uint64_t sx[S_FIXED];

	/* the unit may be one of the others ("nanoseconds"): each once, at whichever index */
	for (int i = 0; i < S_FIXED; i++)
		sx[i] = str_of(&t, fixed[i]);
	value_type(p, 1, sx[S_TYPE], sx[S_UNIT]);
	if (has_ns)
		value_type(p, 1, sx[S_CPU], sx[S_NS]);
	for (size_t i = 0; i < av->n; i++) {
		const struct ks_ssample *s = &av->s[i];

		/* location ids leaf first */
		for (uint32_t j = s->n; j-- > 0;)
			ks_pb_varint(&packed, s->locs[j] + 1);
		ks_pb_msg(&m, 1, &packed);
		ks_pb_varint(&packed, s->value);
		if (has_ns)
			ks_pb_varint(&packed, s->value * st->period_ns);
		ks_pb_msg(&m, 2, &packed);
		if (s->comm)
			label(&m, &lbl, sx[S_COMM], str_of(&t, st->names[s->comm - 1]), 0);
		if (s->pid)
			label(&m, &lbl, sx[S_PID], 0, s->pid);
		if (s->tid)
			label(&m, &lbl, sx[S_TID], 0, s->tid);
		ks_pb_msg(p, 2, &m);
	}
	/* what each mapping's locations have: file names, line numbers, inlined frames */
	mflags = calloc(av->nmaps ? av->nmaps : 1, 1);
	if (!mflags) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < av->nlocs; i++) {
		const struct ks_sloc *l = &av->locs[i];

		for (uint32_t j = 0; l->mapping && j < l->nlines; j++)
			mflags[l->mapping - 1] |= (l->lines[j].file ? 1 : 0) | (l->lines[j].line > 0 ? 2 : 0) | (j ? 4 : 0);
	}
	for (size_t i = 0; i < av->nmaps; i++) {
		const struct ks_smapping *mp = &av->maps[i];

		ks_pb_uint(&m, 1, i + 1);
		ks_pb_uint(&m, 2, mp->start);
		ks_pb_uint(&m, 3, mp->limit);
		ks_pb_uint(&m, 4, mp->offset);
		ks_pb_uint(&m, 5, str_of(&t, mp->file));
		ks_pb_uint(&m, 6, str_of(&t, mp->build_id));
		/* symbolized here (has_functions): a consumer need not symbolize again (it may, by build ID) */
		ks_pb_uint(&m, 7, 1);
		if (mflags[i] & 1)
			ks_pb_uint(&m, 8, 1);
		if (mflags[i] & 2)
			ks_pb_uint(&m, 9, 1);
		if (mflags[i] & 4)
			ks_pb_uint(&m, 10, 1);
		ks_pb_msg(p, 3, &m);
	}
	for (size_t i = 0; i < av->nlocs; i++) {
		const struct ks_sloc *l = &av->locs[i];

		ks_pb_uint(&m, 1, i + 1);
		if (l->mapping)
			ks_pb_uint(&m, 2, l->mapping);
		if (l->addr)
			ks_pb_uint(&m, 3, l->addr);
		for (uint32_t j = 0; j < l->nlines; j++) {
			const struct ks_sline *ln = &l->lines[j];
			uint64_t file = ln->file ? str_of(&t, ln->file) : st->kinds[ln->frame] == KS_FK_KERNEL ? sx[S_KERNEL] : 0;
			uint64_t fid = func_of(&ft, (uint64_t)ln->frame << 32 | file);

			if (!fid) {
				err = -ENOMEM;
				goto out;
			}
			ks_pb_uint(&lbl, 1, fid);
			if (ln->line > 0)
				ks_pb_uint(&lbl, 2, (uint64_t)ln->line);
			ks_pb_msg(&m, 4, &lbl);
		}
		ks_pb_msg(p, 4, &m);
	}
	for (size_t i = 0; i < ft.n; i++) {
		uint32_t frame = (uint32_t)(ft.key[i] >> 32);
		uint64_t name = str_of(&t, st->names[frame]);

		/* Function {id, name, system_name, filename} */
		ks_pb_uint(&m, 1, i + 1);
		ks_pb_uint(&m, 2, name);
		ks_pb_uint(&m, 3, name);
		if ((uint32_t)ft.key[i])
			ks_pb_uint(&m, 4, (uint32_t)ft.key[i]);
		ks_pb_msg(p, 5, &m);
	}
	if (st->time_ns)
		ks_pb_uint(p, 9, st->time_ns);
	if (st->duration_ns)
		ks_pb_uint(p, 10, st->duration_ns);
	/* what one sample stands for: CPU time at -F, else one of the sample type's unit */
	if (has_ns)
		value_type(p, 11, sx[S_CPU], sx[S_NS]);
	else
		value_type(p, 11, sx[S_TYPE], sx[S_UNIT]);
	ks_pb_uint(p, 12, has_ns ? st->period_ns : 1);
	for (size_t i = 0; i < t.n; i++)
		ks_pb_str(p, 6, t.s[i]);
	err = t.err;
out:
	free(mflags);
	strtab_free(&t);
	free(ft.key);
	free(ft.h);
	ks_pb_free(&m);
	ks_pb_free(&packed);
	ks_pb_free(&lbl);
	return err ? err : p->err;
}

int ks_write_pprof(const struct ks_stacks *st, FILE *out)
{
	struct ks_stacks tmp = { 0 };
	struct ks_pb p = { 0 };
	uint8_t buf[16384];
	z_stream z = { 0 };
	int err, zr;

	if (st->av) {
		err = encode(st, st->av, &p);
	} else {
		err = view_by_name(st, &tmp);
		if (!err)
			err = encode(st, tmp.av, &p);
		ks_addr_view_free(tmp.av);
	}
	if (err)
		goto out;
	/* windowBits 15 + 16: a gzip wrapper, as pprof files are */
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		err = -ENOMEM;
		goto out;
	}
	z.next_in = p.b;
	z.avail_in = p.n;
	do {
		z.next_out = buf;
		z.avail_out = sizeof(buf);
		zr = deflate(&z, Z_FINISH);
		if (zr == Z_STREAM_ERROR) {
			err = -EIO;
			break;
		}
		fwrite(buf, 1, sizeof(buf) - z.avail_out, out);
	} while (zr != Z_STREAM_END);
	deflateEnd(&z);
	if (!err)
		err = ks_stream_status(out);
out:
	ks_pb_free(&p);
	return err;
}
