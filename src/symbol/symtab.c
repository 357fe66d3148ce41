/* A module's symbols sorted by address, answering as dwfl_module_addrinfo does without its walk of the whole table per address. */
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "symbol/symbol.h"
#include "symbol/symtab.h"

/*
 * Why: libdwfl looks an address up by walking every symbol of the module
 * (dwfl_module_addrsym.c), ~20k in libc's debug file.  A system-wide
 * profile names a few thousand distinct functions, and those walks were a
 * third of `ksight profile`'s own CPU.  Here the table is read once per
 * file, sorted, and searched by bisection.
 *
 * The answer is libdwfl's (elfutils 0.188), rule for rule:
 * - it walks the global symbols (from dwfl_module_getsymtab_first_global)
 *   first, and the locals only when no global sized symbol holds the
 *   address and no global label sits exactly on it;
 * - within a walk a holding sized symbol replaces the kept one when it
 *   starts closer or binds stronger, and at one start a smaller or
 *   stronger one does (beats());
 * - a label (sizeless symbol) is the answer only where no sized symbol
 *   holds the address: the last one met at the highest start below it, in
 *   the address's section, when no symbol below the address ends above
 *   it.  "Section" is libdwfl's find_section (derelocate.c): the file's
 *   allocated sections by address, each holding its end address too unless
 *   the next starts there, and 0 for addresses in none.  A label in no
 *   section (SHN_ABS) names its own address only.
 * tests/unit/test_symtab.c compares the two at every symbol's edges and
 * across the text of real files.
 */

/* libdwfl's binding order (binding_value in dwfl_module_addrsym.c). */
static unsigned rank_of(const GElf_Sym *s)
{
	switch (GELF_ST_BIND(s->st_info)) {
	case STB_GLOBAL:
		return 3;
	case STB_WEAK:
		return 2;
	case STB_LOCAL:
		return 1;
	default:
		return 0;
	}
}

/* By start, then in the order libdwfl's two walks meet them. */
static int cmp_ent(const void *a, const void *b)
{
	const struct ks_symtab_ent *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->local != y->local)
		return x->local < y->local ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int push(struct ks_symtab_ent **v, size_t *n, size_t *cap, const struct ks_symtab_ent *e)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 256;
		struct ks_symtab_ent *t = realloc(*v, c * sizeof(*t));

		if (!t)
			return -ENOMEM;
		*v = t;
		*cap = c;
	}
	(*v)[(*n)++] = *e;
	return 0;
}

static int cmp_sec(const void *a, const void *b)
{
	const struct ks_symtab_sec *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->ndx < y->ndx ? -1 : x->ndx > y->ndx; /* libdwfl's sort keeps file order */
}

/* The allocated sections of @m's main file, as libdwfl's cache_sections lists them. */
static int read_sections(struct ks_symtab *t, Dwfl_Module *m)
{
	Dwarf_Addr bias;
	Elf *elf = dwfl_module_getelf(m, &bias);
	Elf_Scn *scn = NULL;
	size_t n = 0, cap = 0;

	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr mem, *sh = gelf_getshdr(scn, &mem);

		if (!sh || !(sh->sh_flags & SHF_ALLOC))
			continue;
		if (n == cap) {
			size_t c = cap ? cap * 2 : 64;
			struct ks_symtab_sec *v = realloc(t->secs, c * sizeof(*v));

			if (!v)
				return -ENOMEM;
			t->secs = v;
			cap = c;
		}
		t->secs[n++] = (struct ks_symtab_sec){ sh->sh_addr + bias, sh->sh_addr + bias + sh->sh_size,
						       elf_ndxscn(scn) };
	}
	t->nsecs = n;
	if (n)
		qsort(t->secs, n, sizeof(*t->secs), cmp_sec);
	return 0;
}

/* libdwfl's find_section: the section index holding @a, 0 for none. */
static size_t section_of(const struct ks_symtab *t, uint64_t a)
{
	size_t l = 0, u = t->nsecs;

	while (l < u) {
		size_t i = (l + u) / 2;

		if (a < t->secs[i].start) {
			u = i;
		} else if (a > t->secs[i].end) {
			l = i + 1;
		} else {
			if (a == t->secs[i].end && i + 1 < t->nsecs && a == t->secs[i + 1].start)
				i++;
			return t->secs[i].ndx;
		}
	}
	return 0;
}

int ks_symtab_build(struct ks_symtab *t, Dwfl_Module *m)
{
	size_t capsz = 0, caplb = 0;
	int n = dwfl_module_getsymtab(m), first_global = dwfl_module_getsymtab_first_global(m);

	memset(t, 0, sizeof(*t));
	if (read_sections(t, m)) {
		ks_symtab_free(t);
		return -ENOMEM;
	}
	for (int i = 1; i < n; i++) {
		struct ks_symtab_ent e = { 0 };
		GElf_Addr addr;
		GElf_Word shndx;
		GElf_Sym sym;
		const char *name = dwfl_module_getsym_info(m, i, &sym, &addr, &shndx, NULL, NULL);
		int type = GELF_ST_TYPE(sym.st_info), err;

		/* the symbols libdwfl's search considers */
		if (!name || !*name || sym.st_shndx == SHN_UNDEF || type == STT_SECTION || type == STT_FILE ||
		    type == STT_TLS)
			continue;
		e.start = addr;
		e.end = addr + sym.st_size;
		e.name = name;
		e.rank = rank_of(&sym);
		/* first_global 0: only a dynamic table, walked once */
		e.local = first_global > 1 && i < first_global;
		e.idx = (unsigned)i;
		e.abs = shndx >= SHN_LORESERVE;
		e.sec = sym.st_size ? 0 : section_of(t, addr);
		err = sym.st_size ? push(&t->sized, &t->nsized, &capsz, &e) : push(&t->labels, &t->nlabels, &caplb, &e);
		if (err) {
			ks_symtab_free(t);
			return err;
		}
	}
	if (t->nsized)
		qsort(t->sized, t->nsized, sizeof(*t->sized), cmp_ent);
	if (t->nlabels)
		qsort(t->labels, t->nlabels, sizeof(*t->labels), cmp_ent);
	t->max_end = malloc((t->nsized ? t->nsized : 1) * sizeof(*t->max_end));
	if (!t->max_end) {
		ks_symtab_free(t);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->nsized; i++)
		t->max_end[i] = i && t->max_end[i - 1] > t->sized[i].end ? t->max_end[i - 1] : t->sized[i].end;
	return 0;
}

/* libdwfl's replacement rule within one search: does @s beat the kept @c? */
static int beats(const struct ks_symtab_ent *c, const struct ks_symtab_ent *s)
{
	uint64_t csz = c->end - c->start, ssz = s->end - s->start;

	if (c->start < s->start || c->rank < s->rank)
		return 1;
	return c->start == s->start &&
	       ((csz > ssz && c->rank <= s->rank) || (csz >= ssz && c->rank < s->rank));
}

/* Index order: the order one walk of libdwfl meets symbols in. */
static int cmp_idx(const void *a, const void *b)
{
	const struct ks_symtab_ent *const *x = a, *const *y = b;

	return (*x)->idx < (*y)->idx ? -1 : (*x)->idx > (*y)->idx;
}

#define HOLDERS_MAX 64

/*
 * The sized symbol holding @a among those of one walk (@local: the
 * second), as libdwfl's walk in index order keeps it; NULL
 * with *@many set when more than HOLDERS_MAX hold it (never seen: nested
 * symbols are few).
 */
static const struct ks_symtab_ent *holder(const struct ks_symtab *t, size_t upper, uint64_t a, unsigned local,
					  int *many)
{
	const struct ks_symtab_ent *c[HOLDERS_MAX], *best;
	size_t n = 0;

	/* every symbol holding @a starts at or below it and ends above it: stop where no earlier one can */
	for (size_t i = upper; i-- > 0 && t->max_end[i] > a;) {
		const struct ks_symtab_ent *s = &t->sized[i];

		if (a >= s->end || s->local != local)
			continue;
		if (n == HOLDERS_MAX) {
			*many = 1;
			return NULL;
		}
		c[n++] = s;
	}
	if (!n)
		return NULL;
	qsort(c, n, sizeof(c[0]), cmp_idx);
	best = c[0];
	for (size_t i = 1; i < n; i++)
		if (beats(best, c[i]))
			best = c[i];
	return best;
}

const struct ks_symtab_ent *ks_symtab_find(const struct ks_symtab *t, uint64_t a, uint64_t *off)
{
	size_t upper = ks_sym_upper(t->sized, t->nsized, sizeof(*t->sized), a);
	size_t lu = ks_sym_upper(t->labels, t->nlabels, sizeof(*t->labels), a), i;
	const struct ks_symtab_ent *s, *l = NULL;
	int many = 0;

	*off = 0;
	s = holder(t, upper, a, 0, &many);
	/* a global label exactly at @a: the locals are not walked; the last one met is kept */
	for (i = lu; !s && !many && i-- > 0 && t->labels[i].start == a;)
		if (!t->labels[i].local) {
			l = &t->labels[i];
			break;
		}
	if (!s && !l && !many)
		s = holder(t, upper, a, 1, &many);
	if (many) {
		*off = UINT64_MAX;
		return NULL;
	}
	if (s) {
		*off = a - s->start;
		return s;
	}
	if (!l && lu) {
		/* the labels at the highest start below @a: the last one met that may name @a */
		uint64_t top = t->labels[lu - 1].start;
		size_t sec = section_of(t, a);

		for (i = lu; i-- > 0 && t->labels[i].start == top;)
			if (t->labels[i].abs ? top == a : t->labels[i].sec == sec) {
				l = &t->labels[i];
				break;
			}
		/* a symbol below @a that ends above it (an unusable label counts, at its start) excludes it */
		if (l && upper && t->max_end[upper - 1] > top)
			l = NULL;
	}
	if (l)
		*off = a - l->start;
	return l;
}

void ks_symtab_free(struct ks_symtab *t)
{
	free(t->sized);
	free(t->labels);
	free(t->max_end);
	free(t->secs);
	memset(t, 0, sizeof(*t));
}
