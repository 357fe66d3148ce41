/* Kernel symbols from /proc/kallsyms: text symbols sorted by address, looked up by binary search. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "symbol/symbol.h"

struct ksym {
	uint64_t addr;
	char *name;
};

struct ks_ksyms {
	struct ksym *s;
	size_t n, cap;
	bool hidden;
};

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

struct ks_ksyms *ks_ksyms_load(const char *path)
{
	char line[512], name[256], mod[128], type;
	struct ks_ksyms *k;
	unsigned long long addr;
	size_t zero = 0, total = 0;
	FILE *f;

	f = fopen(path ? path : "/proc/kallsyms", "re");
	if (!f)
		return NULL;
	k = calloc(1, sizeof(*k));
	if (!k)
		goto fail;
	while (fgets(line, sizeof(line), f)) {
		int n;

		mod[0] = 0;
		n = sscanf(line, "%llx %c %255s [%127[^]]]", &addr, &type, name, mod);
		if (n < 3)
			continue;
		total++;
		if (!addr) {
			zero++;
			continue;
		}
		/* text symbols only: a sample's address is always in code */
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		if (k->n == k->cap) {
			size_t cap = k->cap ? k->cap * 2 : 65536;
			struct ksym *s = realloc(k->s, cap * sizeof(*s));

			if (!s)
				goto fail;
			k->s = s;
			k->cap = cap;
		}
		if (mod[0]) {
			size_t l = strlen(name) + strlen(mod) + 4;

			k->s[k->n].name = malloc(l);
			if (k->s[k->n].name)
				snprintf(k->s[k->n].name, l, "%s [%s]", name, mod);
		} else {
			k->s[k->n].name = strdup(name);
		}
		if (!k->s[k->n].name)
			goto fail;
		k->s[k->n++].addr = addr;
	}
	fclose(f);
	/* kptr_restrict (or no CAP_SYSLOG) shows every address as 0 */
	k->hidden = total && zero == total;
	if (k->n) /* none when every address was hidden: k->s is then NULL, which qsort must not get */
		qsort(k->s, k->n, sizeof(*k->s), cmp_ksym);
	return k;
fail:
	fclose(f);
	ks_ksyms_free(k);
	errno = ENOMEM;
	return NULL;
}

bool ks_ksyms_hidden(const struct ks_ksyms *k)
{
	return k->hidden;
}

size_t ks_sym_upper(const void *base, size_t n, size_t stride, uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t a;

		memcpy(&a, (const char *)base + mid * stride, sizeof(a));
		if (a <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const char *ks_ksyms_name(const struct ks_ksyms *k, uint64_t addr)
{
	size_t i = ks_sym_upper(k->s, k->n, sizeof(*k->s), addr);

	return i ? k->s[i - 1].name : NULL;
}

void ks_ksyms_free(struct ks_ksyms *k)
{
	if (!k)
		return;
	for (size_t i = 0; i < k->n; i++)
		free(k->s[i].name);
	free(k->s);
	free(k);
}
