/* The stack-profile model: interned frames, merged stacks, the stack writer table and the folded writer. */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "output/output.h"
#include "output/stacks.h"
#include "core/hash.h"
#include "core/sanitize.h"

void ks_stacks_init(struct ks_stacks *st, const char *sample_type, const char *unit, uint64_t period_ns)
{
	memset(st, 0, sizeof(*st));
	st->sample_type = sample_type;
	st->unit = unit;
	st->period_ns = period_ns;
}

void ks_addr_view_free(struct ks_addr_view *av)
{
	if (!av)
		return;
	for (size_t i = 0; i < av->nmaps; i++) {
		free(av->maps[i].file);
		free(av->maps[i].build_id);
	}
	for (size_t i = 0; i < av->nlocs; i++) {
		for (uint32_t j = 0; j < av->locs[i].nlines; j++)
			free(av->locs[i].lines[j].file);
		free(av->locs[i].lines);
	}
	for (size_t i = 0; i < av->n; i++)
		free(av->s[i].locs);
	free(av->maps);
	free(av->mhash);
	free(av->locs);
	free(av->lhash);
	free(av->s);
	free(av->shash);
	free(av);
}

void ks_stacks_free(struct ks_stacks *st)
{
	for (size_t i = 0; i < st->nnames; i++)
		free(st->names[i]);
	for (size_t i = 0; i < st->n; i++)
		free(st->s[i].frames);
	free(st->names);
	free(st->kinds);
	free(st->fhash);
	free(st->s);
	free(st->shash);
	ks_addr_view_free(st->av);
	memset(st, 0, sizeof(*st));
}

static uint64_t frame_hash(const char *name, uint8_t kind)
{
	return ks_fnv1a(name, strlen(name), ks_fnv1a(&kind, 1, KS_FNV1A_INIT));
}

static uint64_t stack_hash(const uint32_t *f, uint32_t n)
{
	return ks_fnv1a(f, n * sizeof(*f), KS_FNV1A_INIT);
}

/* Doubles an open-addressing table of @cap slots (0 at first), rehashing by @hash_of. */
static int grow(uint32_t **tab, size_t *cap, uint64_t (*hash_of)(const struct ks_stacks *, uint32_t),
		const struct ks_stacks *st, size_t used)
{
	size_t ncap = *cap ? *cap * 2 : 1024;
	uint32_t *n = calloc(ncap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < used; i++) {
		size_t h = hash_of(st, i) & (ncap - 1);

		while (n[h])
			h = (h + 1) & (ncap - 1);
		n[h] = i + 1;
	}
	free(*tab);
	*tab = n;
	*cap = ncap;
	return 0;
}

static uint64_t frame_hash_of(const struct ks_stacks *st, uint32_t i)
{
	return frame_hash(st->names[i], st->kinds[i]);
}

static uint64_t stack_hash_of(const struct ks_stacks *st, uint32_t i)
{
	return stack_hash(st->s[i].frames, st->s[i].n);
}

int64_t ks_stacks_frame(struct ks_stacks *st, const char *name, enum ks_frame_kind kind)
{
	size_t h;

	if ((st->nnames + 1) * 2 > st->fhash_cap &&
	    grow(&st->fhash, &st->fhash_cap, frame_hash_of, st, st->nnames))
		return -ENOMEM;
	h = frame_hash(name, kind) & (st->fhash_cap - 1);
	for (; st->fhash[h]; h = (h + 1) & (st->fhash_cap - 1)) {
		uint32_t i = st->fhash[h] - 1;

		if (st->kinds[i] == kind && !strcmp(st->names[i], name))
			return i;
	}
	if (st->nnames == st->capnames) {
		size_t cap = st->capnames ? st->capnames * 2 : 256;
		char **n = realloc(st->names, cap * sizeof(*n));
		uint8_t *k;

		if (!n)
			return -ENOMEM;
		st->names = n;
		k = realloc(st->kinds, cap);
		if (!k)
			return -ENOMEM;
		st->kinds = k;
		st->capnames = cap;
	}
	st->names[st->nnames] = strdup(name);
	if (!st->names[st->nnames])
		return -ENOMEM;
	st->kinds[st->nnames] = kind;
	st->fhash[h] = st->nnames + 1;
	return st->nnames++;
}

int ks_stacks_add(struct ks_stacks *st, const uint32_t *frames, uint32_t n, uint64_t value)
{
	struct ks_stack *s;
	size_t h;

	if ((st->n + 1) * 2 > st->shash_cap && grow(&st->shash, &st->shash_cap, stack_hash_of, st, st->n))
		return -ENOMEM;
	h = stack_hash(frames, n) & (st->shash_cap - 1);
	for (; st->shash[h]; h = (h + 1) & (st->shash_cap - 1)) {
		s = &st->s[st->shash[h] - 1];
		if (s->n == n && !memcmp(s->frames, frames, n * sizeof(*frames))) {
			s->value += value;
			st->total += value;
			return 0;
		}
	}
	if (st->n == st->cap) {
		size_t cap = st->cap ? st->cap * 2 : 256;

		s = realloc(st->s, cap * sizeof(*s));
		if (!s)
			return -ENOMEM;
		st->s = s;
		st->cap = cap;
	}
	s = &st->s[st->n];
	s->frames = malloc((n ? n : 1) * sizeof(*frames));
	if (!s->frames)
		return -ENOMEM;
	memcpy(s->frames, frames, n * sizeof(*frames));
	s->n = n;
	s->value = value;
	st->total += value;
	st->shash[h] = ++st->n;
	return 0;
}

int ks_stacks_by_address(struct ks_stacks *st)
{
	if (!st->av)
		st->av = calloc(1, sizeof(*st->av));
	return st->av ? 0 : -ENOMEM;
}

static uint64_t str_hash(const char *s, uint64_t h)
{
	return s ? ks_fnv1a(s, strlen(s) + 1, h) : h;
}

static bool str_eq(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static uint64_t mapping_hash(const struct ks_smapping *m)
{
	uint64_t r[3] = { m->start, m->limit, m->offset };

	return str_hash(m->build_id, str_hash(m->file, ks_fnv1a(r, sizeof(r), KS_FNV1A_INIT)));
}

static uint64_t mapping_hash_of(const struct ks_stacks *st, uint32_t i)
{
	return mapping_hash(&st->av->maps[i]);
}

static uint64_t loc_hash(uint32_t mapping, uint64_t addr, const struct ks_sline *l, uint32_t n)
{
	uint64_t h = ks_fnv1a(&addr, sizeof(addr), ks_fnv1a(&mapping, sizeof(mapping), KS_FNV1A_INIT));

	for (uint32_t j = 0; j < n; j++)
		h = str_hash(l[j].file, ks_fnv1a(&l[j], offsetof(struct ks_sline, file), h));
	return h;
}

static uint64_t loc_hash_of(const struct ks_stacks *st, uint32_t i)
{
	const struct ks_sloc *l = &st->av->locs[i];

	return loc_hash(l->mapping, l->addr, l->lines, l->nlines);
}

static uint64_t sample_hash(const uint32_t *locs, uint32_t n, uint32_t pid, uint32_t tid, uint32_t comm)
{
	uint32_t k[3] = { pid, tid, comm };

	return ks_fnv1a(locs, n * sizeof(*locs), ks_fnv1a(k, sizeof(k), KS_FNV1A_INIT));
}

static uint64_t sample_hash_of(const struct ks_stacks *st, uint32_t i)
{
	const struct ks_ssample *s = &st->av->s[i];

	return sample_hash(s->locs, s->n, s->pid, s->tid, s->comm);
}

/* Room for one more of @n elements of @size in *@arr of *@cap; 0 or -ENOMEM. */
static int reserve(void *arr, size_t *cap, size_t n, size_t size)
{
	void **a = arr, *g;
	size_t c;

	if (n < *cap)
		return 0;
	c = *cap ? *cap * 2 : 64;
	g = realloc(*a, c * size);
	if (!g)
		return -ENOMEM;
	*a = g;
	*cap = c;
	return 0;
}

int64_t ks_stacks_mapping(struct ks_stacks *st, const struct ks_smapping *m)
{
	struct ks_addr_view *av = st->av;
	struct ks_smapping *e;
	size_t h;

	if ((av->nmaps + 1) * 2 > av->mhash_cap && grow(&av->mhash, &av->mhash_cap, mapping_hash_of, st, av->nmaps))
		return -ENOMEM;
	for (h = mapping_hash(m) & (av->mhash_cap - 1); av->mhash[h]; h = (h + 1) & (av->mhash_cap - 1)) {
		e = &av->maps[av->mhash[h] - 1];
		if (e->start == m->start && e->limit == m->limit && e->offset == m->offset && str_eq(e->file, m->file) &&
		    str_eq(e->build_id, m->build_id))
			return av->mhash[h];
	}
	if (reserve(&av->maps, &av->capmaps, av->nmaps, sizeof(*av->maps)))
		return -ENOMEM;
	e = &av->maps[av->nmaps];
	*e = (struct ks_smapping){ m->start, m->limit, m->offset, strdup(m->file ? m->file : ""),
				   strdup(m->build_id ? m->build_id : "") };
	if (!e->file || !e->build_id) {
		free(e->file);
		free(e->build_id);
		return -ENOMEM;
	}
	av->mhash[h] = ++av->nmaps;
	return av->nmaps;
}

int64_t ks_stacks_location(struct ks_stacks *st, uint32_t mapping, uint64_t addr, const struct ks_sline *lines, uint32_t n)
{
	struct ks_addr_view *av = st->av;
	struct ks_sloc *e;
	size_t h;

	if ((av->nlocs + 1) * 2 > av->lhash_cap && grow(&av->lhash, &av->lhash_cap, loc_hash_of, st, av->nlocs))
		return -ENOMEM;
	for (h = loc_hash(mapping, addr, lines, n) & (av->lhash_cap - 1); av->lhash[h]; h = (h + 1) & (av->lhash_cap - 1)) {
		uint32_t j = 0;

		e = &av->locs[av->lhash[h] - 1];
		if (e->mapping != mapping || e->addr != addr || e->nlines != n)
			continue;
		while (j < n && e->lines[j].frame == lines[j].frame && e->lines[j].line == lines[j].line &&
		       str_eq(e->lines[j].file, lines[j].file))
			j++;
		if (j == n)
			return av->lhash[h] - 1;
	}
	if (reserve(&av->locs, &av->caplocs, av->nlocs, sizeof(*av->locs)))
		return -ENOMEM;
	e = &av->locs[av->nlocs];
	*e = (struct ks_sloc){ .mapping = mapping, .addr = addr };
	e->lines = calloc(n ? n : 1, sizeof(*e->lines));
	if (!e->lines)
		return -ENOMEM;
	for (; e->nlines < n; e->nlines++) {
		struct ks_sline *l = &e->lines[e->nlines];

		*l = lines[e->nlines];
		if (l->file && !(l->file = strdup(l->file))) {
			for (uint32_t j = 0; j < e->nlines; j++)
				free(e->lines[j].file);
			free(e->lines);
			return -ENOMEM;
		}
	}
	av->lhash[h] = ++av->nlocs;
	return av->nlocs - 1;
}

int ks_stacks_add_sample(struct ks_stacks *st, const uint32_t *locs, uint32_t n, uint32_t pid, uint32_t tid, uint32_t comm,
			 uint64_t value)
{
	struct ks_addr_view *av = st->av;
	struct ks_ssample *s;
	size_t h;

	if ((av->n + 1) * 2 > av->shash_cap && grow(&av->shash, &av->shash_cap, sample_hash_of, st, av->n))
		return -ENOMEM;
	for (h = sample_hash(locs, n, pid, tid, comm) & (av->shash_cap - 1); av->shash[h]; h = (h + 1) & (av->shash_cap - 1)) {
		s = &av->s[av->shash[h] - 1];
		if (s->n == n && s->pid == pid && s->tid == tid && s->comm == comm && !memcmp(s->locs, locs, n * sizeof(*locs))) {
			s->value += value;
			return 0;
		}
	}
	if (reserve(&av->s, &av->cap, av->n, sizeof(*av->s)))
		return -ENOMEM;
	s = &av->s[av->n];
	*s = (struct ks_ssample){ .n = n, .pid = pid, .tid = tid, .comm = comm, .value = value };
	s->locs = malloc((n ? n : 1) * sizeof(*locs));
	if (!s->locs)
		return -ENOMEM;
	memcpy(s->locs, locs, n * sizeof(*locs));
	av->shash[h] = ++av->n;
	return 0;
}

static const struct ks_stacks *sort_st;

static int cmp_stack(const void *a, const void *b)
{
	const struct ks_stack *x = a, *y = b;

	for (uint32_t i = 0; i < x->n && i < y->n; i++) {
		int c;

		if (x->frames[i] == y->frames[i])
			continue;
		c = strcmp(sort_st->names[x->frames[i]], sort_st->names[y->frames[i]]);
		if (c)
			return c;
		c = (int)sort_st->kinds[x->frames[i]] - (int)sort_st->kinds[y->frames[i]];
		if (c)
			return c;
	}
	return (x->n > y->n) - (x->n < y->n);
}

void ks_stacks_sort(struct ks_stacks *st)
{
	sort_st = st;
	if (st->n > 1) /* no stacks (no samples) leaves st->s NULL, which qsort must not get */
		qsort(st->s, st->n, sizeof(*st->s), cmp_stack);
	sort_st = NULL;
	/* the hash holds indexes: rebuild it for the new order */
	if (st->shash_cap) {
		memset(st->shash, 0, st->shash_cap * sizeof(*st->shash));
		for (size_t i = 0; i < st->n; i++) {
			size_t h = stack_hash_of(st, i) & (st->shash_cap - 1);

			while (st->shash[h])
				h = (h + 1) & (st->shash_cap - 1);
			st->shash[h] = i + 1;
		}
	}
}

const char *ks_stacks_frame_text(const struct ks_stacks *st, uint32_t id, char *buf, size_t len)
{
	static const char *const suffix[] = { "", "", "_[k]", "_[j]", "_[i]" };
	size_t i;

	const char *sfx = st->kinds[id] <= KS_FK_INLINE ? suffix[st->kinds[id]] : "";
	size_t n;

	/* a comm or symbol is anyone's bytes: valid UTF-8 without controls (no newline to end a stack) */
	n = ks_sanitize(st->names[id], buf, len);
	snprintf(buf + n, len - n, "%s", sfx);
	/* ';' separates frames: it may not be inside a name */
	for (i = 0; buf[i]; i++)
		if (buf[i] == ';')
			buf[i] = ':';
	return buf;
}

int ks_write_folded(const struct ks_stacks *st, FILE *out)
{
	char buf[512];

	for (size_t i = 0; i < st->n; i++) {
		const struct ks_stack *s = &st->s[i];

		for (uint32_t j = 0; j < s->n; j++)
			fprintf(out, "%s%s", j ? ";" : "", ks_stacks_frame_text(st, s->frames[j], buf, sizeof(buf)));
		fprintf(out, " %llu\n", (unsigned long long)s->value);
	}
	return ks_stream_status(out);
}
