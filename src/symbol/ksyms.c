/* Kernel symbols from /proc/kallsyms: text symbols sorted by address, looked up by binary search. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include "symbol/symbol.h"

struct ksym {
	uint64_t addr;
	const char *name; /* in ks_ksyms.text */
};

struct ks_ksyms {
	struct ksym *s;
	size_t n, cap;
	char *text; /* the file as read, its lines made into the names in place */
	size_t text_cap;
	bool hidden;
};

/*
 * The two tables (5 MB of text, 2 MB of symbols here) are anonymous
 * mappings the kernel may back with huge pages: on a VM where a 4 KiB page
 * fault costs ~4.5 us, faulting them in took 30 ms of the load, as much as
 * the kernel's printing of the file.  NULL on failure.
 */
static void *big_alloc(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	madvise(p, len, MADV_HUGEPAGE); /* advice only: 4 KiB pages where refused */
	return p;
}

/* Grows @p from @old to @len bytes, moved where need be; NULL (and @p kept) on failure. */
static void *big_grow(void *p, size_t old, size_t len)
{
	void *n = mremap(p, old, len, MREMAP_MAYMOVE);

	if (n == MAP_FAILED)
		return NULL;
	madvise(n, len, MADV_HUGEPAGE);
	return n;
}

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Reads all of @path into a NUL-terminated big_alloc buffer (*@len bytes, *@cap mapped); NULL with errno set. */
static char *read_all(const char *path, size_t *len, size_t *cap_out)
{
	size_t cap = 8 << 20, n = 0;
	char *buf = big_alloc(cap), *nb;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t r = 0;

	if (fd < 0 || !buf)
		goto fail;
	for (;;) {
		if (cap - n < (1 << 20) + 1) {
			nb = big_grow(buf, cap, cap * 2);
			if (!nb)
				goto fail;
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	if (r < 0)
		goto fail;
	close(fd);
	buf[n] = 0;
	*len = n;
	*cap_out = cap;
	return buf;
fail:
	r = errno;
	if (fd >= 0)
		close(fd);
	if (buf)
		munmap(buf, cap);
	errno = (int)r;
	return NULL;
}

/*
 * The file is read whole and its lines ("ADDR T name" or "ADDR t name\t[mod]")
 * become the names where they lie: the tab before a module made a space and
 * the newline the end, "name" and "name [mod]" as shown.  Parsing by hand,
 * not with fgets, sscanf and a string per symbol: the kernel's 120k symbols
 * took 70 ms of a profile's CPU so, besides the kernel's ~40 ms to print them.
 */
struct ks_ksyms *ks_ksyms_load(const char *path)
{
	struct ks_ksyms *k;
	size_t zero = 0, total = 0, len;
	char *p, *end;

	k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	k->text = read_all(path ? path : "/proc/kallsyms", &len, &k->text_cap);
	if (!k->text) {
		free(k);
		return NULL;
	}
	end = k->text + len;
	for (p = k->text; p < end;) {
		char *nl = memchr(p, '\n', (size_t)(end - p)), *name, *t;
		uint64_t addr = 0;
		char type;
		int digits = 0;

		if (!nl)
			nl = end;
		*nl = 0;
		for (; digits < 16; digits++, p++) {
			int v = *p >= '0' && *p <= '9' ? *p - '0' : (*p | 0x20) >= 'a' && (*p | 0x20) <= 'f' ? (*p | 0x20) - 'a' + 10 : -1;

			if (v < 0)
				break;
			addr = addr << 4 | (uint64_t)v;
		}
		/* "ADDR T NAME": anything else is not a symbol line */
		if (!digits || p[0] != ' ' || !p[1] || p[2] != ' ' || !p[3] || p[3] == ' ' || p[3] == '\t') {
			p = nl + 1;
			continue;
		}
		type = p[1];
		name = p + 3;
		p = nl + 1;
		total++;
		if (!addr) {
			zero++;
			continue;
		}
		/* text symbols only: a sample's address is always in code */
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		/* "name\t[mod]" (or "name [mod]"): one space before the module, nothing after its bracket */
		t = name + strcspn(name, " \t");
		if (*t) {
			char *mod = t + 1 + strspn(t + 1, " \t"), *close = mod[0] == '[' ? strchr(mod, ']') : NULL;

			*t = 0;
			if (close) {
				close[1] = 0;
				if (mod != t + 1)
					memmove(t + 1, mod, (size_t)(close - mod) + 2);
				*t = ' ';
			}
		}
		if (k->n == k->cap) {
			size_t cap = k->cap ? k->cap * 2 : 131072;
			struct ksym *s = k->s ? big_grow(k->s, k->cap * sizeof(*s), cap * sizeof(*s))
					      : big_alloc(cap * sizeof(*s));

			if (!s) {
				ks_ksyms_free(k);
				errno = ENOMEM;
				return NULL;
			}
			k->s = s;
			k->cap = cap;
		}
		k->s[k->n].name = name;
		k->s[k->n++].addr = addr;
	}
	/* kptr_restrict (or no CAP_SYSLOG) shows every address as 0 */
	k->hidden = total && zero == total;
	if (k->n) /* none when every address was hidden: k->s is then NULL, which qsort must not get */
		qsort(k->s, k->n, sizeof(*k->s), cmp_ksym);
	return k;
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
	if (k->text)
		munmap(k->text, k->text_cap);
	if (k->s)
		munmap(k->s, k->cap * sizeof(*k->s));
	free(k);
}

void ks_ksyms_range(const struct ks_ksyms *k, uint64_t *start, uint64_t *end)
{
	*start = k && k->n ? k->s[0].addr : 0;
	/* the last symbol's extent is unknown: to the top, as perf's [kernel.kallsyms] map does */
	*end = k && k->n ? UINT64_MAX : 0;
}

int ks_kernel_build_id(unsigned char *id, int len)
{
	unsigned char buf[4096];
	size_t off = 0, n;
	int fd = open("/sys/kernel/notes", O_RDONLY | O_CLOEXEC);
	ssize_t r;

	if (fd < 0)
		return 0;
	r = read(fd, buf, sizeof(buf));
	close(fd);
	n = r > 0 ? (size_t)r : 0;
	/* ELF notes: namesz, descsz, type, then name and desc each padded to 4 bytes */
	while (off + 12 <= n) {
		uint32_t namesz, descsz, type;
		size_t name_off = off + 12, desc_off;

		memcpy(&namesz, buf + off, 4);
		memcpy(&descsz, buf + off + 4, 4);
		memcpy(&type, buf + off + 8, 4);
		desc_off = name_off + ((namesz + 3u) & ~3u);
		if (namesz > n || descsz > n || desc_off + descsz > n)
			break;
		if (type == 3 /* NT_GNU_BUILD_ID */ && namesz == 4 && !memcmp(buf + name_off, "GNU", 4) &&
		    descsz <= (uint32_t)len) {
			memcpy(id, buf + desc_off, descsz);
			return (int)descsz;
		}
		off = desc_off + ((descsz + 3u) & ~3u);
	}
	return 0;
}
