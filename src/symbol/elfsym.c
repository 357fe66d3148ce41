/* Probe targets in ELF files (funclat): name -> path as ld.so and /proc/PID/maps see it, functions and USDT notes by glob. */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <gelf.h>
#include <glob.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "symbol/elfsym.h"

/* Debian's multiarch library directory of this build's architecture */
#if defined(__x86_64__)
#define KS_MULTIARCH "x86_64-linux-gnu"
#elif defined(__aarch64__)
#define KS_MULTIARCH "aarch64-linux-gnu"
#else
#define KS_MULTIARCH "unknown"
#endif

static int put_path(char *out, size_t len, const char *a, const char *b)
{
	int n = snprintf(out, len, "%s%s", a, b);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* True when the file name @base is @bin, or @bin followed by '.' or '-' (libc -> libc.so.6, libc-2.31.so). */
static int name_matches(const char *base, const char *bin)
{
	size_t n = strlen(bin);

	return !strncmp(base, bin, n) && (!base[n] || base[n] == '.' || base[n] == '-');
}

/* A file mapped by @pid named like @bin, through /proc/PID/root. */
static int from_maps(const char *bin, uint32_t pid, char *out, size_t len)
{
	char path[64], line[4096 + 128];
	int err = -ENOENT, exact = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/'), *base;

		if (!p)
			continue;
		p[strcspn(p, "\n")] = 0;
		base = strrchr(p, '/') + 1;
		/* an exact name wins over a prefix ("libc.so.6" over "libc.so.6-whatever") */
		if (!strcmp(base, bin) && !exact) {
			snprintf(path, sizeof(path), "/proc/%u/root", pid);
			err = put_path(out, len, path, p);
			exact = 1;
		} else if (err == -ENOENT && name_matches(base, bin)) {
			snprintf(path, sizeof(path), "/proc/%u/root", pid);
			err = put_path(out, len, path, p);
		}
	}
	fclose(f);
	return err;
}

/* True when @path starts with the ELF magic (libc.so beside libc.so.6 is a linker script). */
static int is_elf(const char *path)
{
	char m[4] = { 0 };
	FILE *f = fopen(path, "re");
	size_t n = f ? fread(m, 1, 4, f) : 0;

	if (f)
		fclose(f);
	return n == 4 && !memcmp(m, "\177ELF", 4);
}

/* The first ELF file of the sorted glob @pat. */
static int first_elf(const char *pat, char *out, size_t len)
{
	glob_t g;
	int err = -ENOENT;

	if (!glob(pat, 0, NULL, &g))
		for (size_t i = 0; i < g.gl_pathc && err == -ENOENT; i++)
			if (is_elf(g.gl_pathv[i]))
				err = put_path(out, len, g.gl_pathv[i], "");
	globfree(&g);
	return err;
}

/* @bin in directory @dir: the name itself, else the first ELF file of "bin.so*" / "bin-*.so*" there. */
static int in_dir(const char *dir, const char *bin, char *out, size_t len)
{
	char pat[4200];
	int err;

	if (!*dir || snprintf(pat, sizeof(pat), "%s/%s", dir, bin) >= (int)sizeof(pat))
		return -ENOENT;
	if (is_elf(pat))
		return put_path(out, len, pat, "");
	if (strstr(bin, ".so"))
		return -ENOENT;
	snprintf(pat, sizeof(pat), "%s/%s.so*", dir, bin);
	err = first_elf(pat, out, len);
	if (err != -ENOENT)
		return err;
	snprintf(pat, sizeof(pat), "%s/%s-*.so*", dir, bin);
	return first_elf(pat, out, len);
}

/* Each directory of the ':'-separated @list in turn. */
static int in_list(const char *list, const char *bin, char *out, size_t len)
{
	char *dup, *save = NULL;
	int err = -ENOENT;

	if (!list || !(dup = strdup(list)))
		return -ENOENT;
	for (char *d = strtok_r(dup, ":", &save); d && err == -ENOENT; d = strtok_r(NULL, ":", &save))
		err = in_dir(d, bin, out, len);
	free(dup);
	return err;
}

/* The directories of one ld.so.conf file (its "include" lines followed once). */
static int in_ldconf(const char *conf, const char *bin, char *out, size_t len, int depth)
{
	char line[4096];
	int err = -ENOENT;
	FILE *f = fopen(conf, "re");

	if (!f)
		return -ENOENT;
	while (err == -ENOENT && fgets(line, sizeof(line), f)) {
		char *p = line + strspn(line, " \t");

		p[strcspn(p, "#\n")] = 0;
		for (char *e = p + strlen(p); e > p && (e[-1] == ' ' || e[-1] == '\t');)
			*--e = 0;
		if (!strncmp(p, "include", 7) && depth < 2) {
			glob_t g;

			p += 7 + strspn(p + 7, " \t");
			if (!glob(p, 0, NULL, &g))
				for (size_t i = 0; i < g.gl_pathc && err == -ENOENT; i++)
					err = in_ldconf(g.gl_pathv[i], bin, out, len, depth + 1);
			globfree(&g);
		} else if (*p == '/') {
			err = in_dir(p, bin, out, len);
		}
	}
	fclose(f);
	return err;
}

int ks_elf_resolve(const char *bin, uint32_t pid, char *out, size_t len)
{
	int err;

	if (strchr(bin, '/')) {
		if (access(bin, R_OK))
			return -errno;
		return put_path(out, len, bin, "");
	}
	if (pid)
		return from_maps(bin, pid, out, len);
	if (!strncmp(bin, "lib", 3) || strstr(bin, ".so")) {
		err = in_list(getenv("LD_LIBRARY_PATH"), bin, out, len);
		if (err == -ENOENT)
			err = in_ldconf("/etc/ld.so.conf", bin, out, len, 0);
		if (err == -ENOENT)
			err = in_list("/lib/" KS_MULTIARCH ":/usr/lib/" KS_MULTIARCH ":/lib64:/usr/lib64:/lib:/usr/lib", bin,
				      out, len);
		if (err != -ENOENT)
			return err;
	}
	/* a program: the PATH's executable of that name */
	{
		char *path = getenv("PATH"), *dup, *save = NULL, cand[4200];

		if (!path || !(dup = strdup(path)))
			return -ENOENT;
		err = -ENOENT;
		for (char *d = strtok_r(dup, ":", &save); d && err == -ENOENT; d = strtok_r(NULL, ":", &save))
			if (snprintf(cand, sizeof(cand), "%s/%s", d, bin) < (int)sizeof(cand) && !access(cand, X_OK))
				err = put_path(out, len, cand, "");
		free(dup);
	}
	return err;
}

static Elf *elf_open(const char *path, int *fd)
{
	Elf *e;

	elf_version(EV_CURRENT);
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return NULL;
	e = elf_begin(*fd, ELF_C_READ_MMAP, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		if (e)
			elf_end(e);
		close(*fd);
		*fd = -1;
		errno = ENOEXEC;
		return NULL;
	}
	return e;
}

/* Which of two names of one address to keep: fewer leading underscores, then shorter, then smaller. */
static int better_name(const char *a, const char *b)
{
	size_t ua = strspn(a, "_"), ub = strspn(b, "_");

	if (ua != ub)
		return ua < ub;
	if (strlen(a) != strlen(b))
		return strlen(a) < strlen(b);
	return strcmp(a, b) < 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct ks_elf_func *)a)->name, ((const struct ks_elf_func *)b)->name);
}

static int by_offset(const void *a, const void *b)
{
	const struct ks_elf_func *x = a, *y = b;

	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

void ks_elf_funcs_free(struct ks_elf_func *f, size_t n)
{
	for (size_t i = 0; f && i < n; i++)
		free(f[i].name);
	free(f);
}

int ks_elf_funcs(const char *path, const char *pat, struct ks_elf_func **out, size_t *n, size_t *nifunc)
{
	struct ks_elf_func *v = NULL;
	size_t cnt = 0, cap = 0, w = 0;
	Elf_Scn *scn = NULL;
	int fd, err = 0;
	Elf *e = elf_open(path, &fd);

	*out = NULL;
	*n = 0;
	*nifunc = 0;
	if (!e)
		return -errno;
	while (!err && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			GElf_Shdr tsh;
			const char *nm;
			char name[512];
			int type;

			if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF || s.st_shndx >= SHN_LORESERVE ||
			    !s.st_value)
				continue;
			type = GELF_ST_TYPE(s.st_info);
			if (type != STT_FUNC && type != STT_GNU_IFUNC)
				continue;
			nm = elf_strptr(e, sh.sh_link, s.st_name);
			if (!nm || !*nm)
				continue;
			/* "name@VERSION" in some symbol tables: the name is what is matched and shown */
			snprintf(name, sizeof(name), "%.*s", (int)strcspn(nm, "@"), nm);
			if (fnmatch(pat, name, 0))
				continue;
			if (type == STT_GNU_IFUNC) {
				(*nifunc)++;
				continue;
			}
			if (!gelf_getshdr(elf_getscn(e, s.st_shndx), &tsh))
				continue;
			if (cnt == cap) {
				struct ks_elf_func *nv = realloc(v, (cap = cap ? 2 * cap : 64) * sizeof(*v));

				if (!nv) {
					err = -ENOMEM;
					break;
				}
				v = nv;
			}
			v[cnt].name = strdup(name);
			if (!v[cnt].name) {
				err = -ENOMEM;
				break;
			}
			v[cnt++].offset = s.st_value - tsh.sh_addr + tsh.sh_offset;
		}
	}
	elf_end(e);
	close(fd);
	if (err) {
		ks_elf_funcs_free(v, cnt);
		return err;
	}
	/* one entry per address (aliases, and .symtab repeating .dynsym), then one per name */
	if (cnt > 1)
		qsort(v, cnt, sizeof(*v), by_offset);
	for (size_t i = 0; i < cnt; i++) {
		if (w && v[w - 1].offset == v[i].offset) {
			if (better_name(v[i].name, v[w - 1].name)) {
				free(v[w - 1].name);
				v[w - 1].name = v[i].name;
			} else {
				free(v[i].name);
			}
			continue;
		}
		v[w++] = v[i];
	}
	cnt = w;
	if (cnt > 1)
		qsort(v, cnt, sizeof(*v), by_name);
	for (size_t i = w = 0; i < cnt; i++) {
		if (w && !strcmp(v[w - 1].name, v[i].name)) {
			free(v[i].name); /* two local functions of one name: the first address */
			continue;
		}
		v[w++] = v[i];
	}
	*out = v;
	*n = w;
	return 0;
}

void ks_elf_usdts_free(struct ks_elf_usdt *u, size_t n)
{
	for (size_t i = 0; u && i < n; i++) {
		free(u[i].provider);
		free(u[i].name);
	}
	free(u);
}

static int usdt_cmp(const void *a, const void *b)
{
	const struct ks_elf_usdt *x = a, *y = b;
	int c = strcmp(x->provider, y->provider);

	return c ? c : strcmp(x->name, y->name);
}

int ks_elf_usdts(const char *path, const char *prov, const char *name, struct ks_elf_usdt **out, size_t *n)
{
	struct ks_elf_usdt *v = NULL;
	size_t cnt = 0, cap = 0, w = 0, shstrndx;
	Elf_Scn *scn = NULL;
	int fd, err = 0;
	Elf *e = elf_open(path, &fd);

	*out = NULL;
	*n = 0;
	if (!e)
		return -errno;
	if (elf_getshdrstrndx(e, &shstrndx))
		shstrndx = 0;
	while (!err && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		GElf_Nhdr nh;
		Elf_Data *d;
		size_t off = 0, noff, doff;
		const char *sn;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		sn = elf_strptr(e, shstrndx, sh.sh_name);
		if (!sn || strcmp(sn, ".note.stapsdt"))
			continue;
		d = elf_getdata(scn, NULL);
		while (d && (off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
			/* NT_STAPSDT (3): three addresses (pc, base, semaphore), then provider, name, arguments */
			const char *desc = (const char *)d->d_buf + doff, *p, *nm;
			size_t hdr = 3 * (elf_getident(e, NULL)[EI_CLASS] == ELFCLASS64 ? 8 : 4);

			if (nh.n_type != 3 || nh.n_descsz <= hdr || memchr(desc + hdr, 0, nh.n_descsz - hdr) == NULL)
				continue;
			p = desc + hdr;
			nm = p + strlen(p) + 1;
			if (nm >= desc + nh.n_descsz || !memchr(nm, 0, desc + nh.n_descsz - nm))
				continue;
			if (fnmatch(prov, p, 0) || fnmatch(name, nm, 0))
				continue;
			if (cnt == cap) {
				struct ks_elf_usdt *nv = realloc(v, (cap = cap ? 2 * cap : 16) * sizeof(*v));

				if (!nv) {
					err = -ENOMEM;
					break;
				}
				v = nv;
			}
			v[cnt].provider = strdup(p);
			v[cnt].name = strdup(nm);
			cnt++;
			if (!v[cnt - 1].provider || !v[cnt - 1].name) {
				err = -ENOMEM;
				break;
			}
		}
	}
	elf_end(e);
	close(fd);
	if (err) {
		ks_elf_usdts_free(v, cnt);
		return err;
	}
	/* one per (provider, name): a probe used at several places is one target */
	if (cnt > 1)
		qsort(v, cnt, sizeof(*v), usdt_cmp);
	for (size_t i = 0; i < cnt; i++) {
		if (w && !usdt_cmp(&v[w - 1], &v[i])) {
			free(v[i].provider);
			free(v[i].name);
			continue;
		}
		v[w++] = v[i];
	}
	*out = v;
	*n = w;
	return 0;
}
