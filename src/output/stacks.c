/* The stack-profile model: interned frames, merged stacks, the stack writer table and the folded writer. */
#include <errno.h>
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
