/* User-space symbols and DWARF unwinding with elfutils libdwfl: processes captured while they are alive, files read once. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include "core/hash.h"
#include "symbol/symbol.h"
#include "symbol/debugcache.h"
#include "symbol/symtab.h"

#define NBUCKETS 1024

struct jit_sym {
	uint64_t start, end;
	char *name;
};

/*
 * What one address of one module names: its function, and the calls
 * inlined there (names joined by '\0', outermost first; ninl < 0 until
 * asked).  Kept for the run: dwfl_module_addrinfo walks the symbol table
 * at every call (11% of a system-wide fp run's CPU, in it alone, before),
 * and a profile's addresses repeat (every sample of a hot loop, every row
 * of one user stack under other kernel stacks).
 */
struct addr_memo {
	Dwfl_Module *m; /* the module the address was found in, NULL: slot free */
	uint64_t a;	/* the address in it */
	char *name;	/* NULL: the module has no symbol there */
	char *inl;
	int ninl;
};

/*
 * Without unwinding (ks_usyms_new(false)) a process is captured as its
 * executable mappings only, and each file they map is opened once, at the
 * first process that maps it (it may be deleted, or in a container that
 * goes away, before the end), by device and inode; its ELF and symbols are
 * read at the first address looked up in it, whichever process that is.
 * A process capture is then one read of /proc/PID/maps: a system-wide
 * profile captures every short-lived shell and compiler, and opening each
 * one's ELF files (libdwfl's per-process Dwfl) was most of the CPU a
 * profile of frame-pointer stacks took.
 */
struct ufile {
	uint64_t dev, ino;
	int fd;	    /* until the module is made from it; -1 then, or when it could not be opened */
	char *name; /* the path the maps give: the module's name */
	char *path; /* the path opened (through the process's root): its debug link is looked for beside it */
	bool tried;
	Dwfl *dwfl; /* of this one file, at its link-time addresses */
	Dwfl_Module *m;
	GElf_Phdr *load; /* its PT_LOAD headers: file offset to address */
	size_t nload;
	struct ufile *next;
};
#define FILE_BUCKETS 1024

/* An executable mapping of a process captured without unwinding. */
struct umap {
	uint64_t start, end, pgoff;
	struct ufile *f;
};

struct uproc {
	uint32_t pid;
	Dwfl *dwfl; /* NULL: the process was gone before it could be captured, or it has maps */
	Dwfl **old;  /* earlier views (before an exec), newest last: their modules stay valid */
	size_t nold;
	struct umap *maps; /* without unwinding: sorted by start */
	size_t nmaps;
	bool maps_reread; /* once, for an address outside them (a library loaded since) */
	/* unwinding: views read again for a pc outside the view, since the last exec, and when */
	unsigned view_rereads;
	uint64_t view_read_ns;
	uint64_t view_hash; /* of the maps text the current view was read from */
	bool exec_reread; /* announced again (an exec): its maps are read once more at ks_usyms_refresh */
	bool attached, attach_failed, jit_reloaded;
	struct jit_sym *jit;
	size_t njit;
	char root[32]; /* "/proc/PID/root" when the process sees another root (a container), else "" */
	/* the sample being unwound, read by the callbacks */
	uint32_t tid;
	const uint64_t *regs;
	const uint8_t *stack;
	uint32_t len;
	struct uproc *next;
};

/*
 * One module (a file, by build-id) shared by every process that maps it:
 * the first process's Dwfl_Module, whose Dwfl lives as long as the
 * ks_usyms, answers for all.  Its symbol table is read once, not once per
 * process (a system-wide profile captures every short-lived compiler and
 * shell, each with its libc), and so is its DWARF: opening that
 * decompresses the debug sections (Debian's -dbg files' are compressed),
 * which per process took 59% of a system-wide profile's CPU.  An address
 * of another process's copy is the same place in the file at a - its bias
 * + @bias.
 */
struct mod_shared {
	unsigned char id[64];
	int idlen;
	Dwfl_Module *m;
	Dwarf_Addr bias; /* of @m's ELF */
	bool dw_tried;
	Dwarf *dw;	 /* @m's DWARF, once tried; NULL: it has none */
	Dwarf_Addr dbias;
	bool tab_tried;
	struct ks_symtab tab; /* @m's symbols by address, read at the first lookup */
	struct mod_shared *next;
};
#define MOD_BUCKETS 256

struct ks_usyms {
	bool unwind; /* a Dwfl per process, for ks_usyms_unwind; else struct umap and ufile */
	struct uproc *b[NBUCKETS];
	size_t exec_rereads; /* processes with exec_reread set */
	struct ufile *files[FILE_BUCKETS];
	struct ufile *vdso; /* ours, which every process maps too (the same kernel) */
	uint64_t vdso_size; /* of its mapping, pages */
	bool vdso_tried;
	dev_t root_dev; /* of "/" as ksight sees it: a process whose root differs is in a container */
	ino_t root_ino;
	char *mbuf; /* a process's maps as read */
	size_t mcap;
	struct mod_shared *mods[MOD_BUCKETS];
	struct addr_memo *memo; /* open addressing, at most half full */
	size_t nmemo, memo_cap;
};

/* NULL: libdwfl's default path (the file's directory, .debug/, /usr/lib/debug and its .build-id tree) */
static char *debuginfo_path;

/*
 * A module's debug file: its decompressed copy from the debug cache, else
 * libdwfl's search, whose file, when compressed (Debian's -dbg files are),
 * is copied decompressed for the next runs: libdw inflates every section
 * of a compressed file at each open (see debugcache.c).  The cache comes
 * first because libdwfl's search keeps the file it found open in the
 * module (to check its build-id) and uses that one, whatever fd this
 * returns.
 */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
			  char **debuginfo_file_name)
{
	const unsigned char *bits;
	GElf_Addr vaddr;
	int len = dwfl_module_build_id(mod, &bits, &vaddr), fd;

	if (len > 0) {
		fd = ks_debugcache_find(bits, len, debuginfo_file_name);
		if (fd >= 0)
			return fd;
	}
	fd = dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file, debuglink_crc,
					  debuginfo_file_name);
	if (fd >= 0 && len > 0)
		ks_debugcache_add(fd, bits, len);
	return fd;
}

/*
 * section_address: a process's view reports every mapped file, and a
 * relocatable object among them (a linker maps its inputs) is relocated at
 * its first dwfl_module_getelf through this callback; left NULL, libdwfl
 * called address 0 (SIGSEGV).  Offline placement is as good as any: such a
 * file's code never runs.
 */
static const Dwfl_Callbacks proc_cbs = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

static const Dwfl_Callbacks file_cbs = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = find_debuginfo,
	.debuginfo_path = &debuginfo_path,
};

struct ks_usyms *ks_usyms_new(bool unwind)
{
	struct ks_usyms *u = calloc(1, sizeof(struct ks_usyms));
	struct stat st;

	if (!u)
		return NULL;
	u->unwind = unwind;
	if (!stat("/", &st)) {
		u->root_dev = st.st_dev;
		u->root_ino = st.st_ino;
	}
	return u;
}

static void file_free(struct ufile *f)
{
	if (f->dwfl)
		dwfl_end(f->dwfl);
	if (f->fd >= 0)
		close(f->fd);
	free(f->name);
	free(f->path);
	free(f->load);
	free(f);
}

static void jit_free(struct uproc *p)
{
	for (size_t i = 0; i < p->njit; i++)
		free(p->jit[i].name);
	free(p->jit);
	p->jit = NULL;
	p->njit = 0;
}

void ks_usyms_free(struct ks_usyms *u)
{
	if (!u)
		return;
	for (int i = 0; i < NBUCKETS; i++) {
		struct uproc *p = u->b[i], *n;

		for (; p; p = n) {
			n = p->next;
			if (p->dwfl)
				dwfl_end(p->dwfl);
			for (size_t k = 0; k < p->nold; k++)
				dwfl_end(p->old[k]);
			free(p->old);
			free(p->maps);
			jit_free(p);
			free(p);
		}
	}
	for (int i = 0; i < MOD_BUCKETS; i++) {
		for (struct mod_shared *s = u->mods[i], *n; s; s = n) {
			n = s->next;
			ks_symtab_free(&s->tab);
			free(s);
		}
	}
	for (int i = 0; i < FILE_BUCKETS; i++) {
		for (struct ufile *f = u->files[i], *n; f; f = n) {
			n = f->next;
			file_free(f);
		}
	}
	if (u->vdso)
		file_free(u->vdso);
	free(u->mbuf);
	for (size_t i = 0; i < u->memo_cap; i++) {
		free(u->memo[i].name);
		free(u->memo[i].inl);
	}
	free(u->memo);
	free(u);
}

static struct mod_shared *shared_of(struct ks_usyms *u, Dwfl_Module *m, bool make, Dwarf_Addr *bias);

static size_t memo_slot(const struct addr_memo *t, size_t cap, const Dwfl_Module *m, uint64_t a)
{
	uint64_t h = ((uint64_t)(uintptr_t)m ^ a) * 0x9e3779b97f4a7c15ull;
	size_t i = (size_t)(h >> 20) & (cap - 1);

	while (t[i].m && (t[i].m != m || t[i].a != a))
		i = (i + 1) & (cap - 1);
	return i;
}

/* @name without a dynamic symbol's version ("@@GLIBC_2.34"), which is not part of the function's name; NULL: no memory. */
static char *symbol_name(const char *name)
{
	const char *at = strchr(name + 1, '@');

	return strndup(name, at ? (size_t)(at - name) : strlen(name));
}

/*
 * The memo of address @a of module @m, made when new (name looked up, the
 * inlined calls not yet); NULL: no memory.
 */
static struct addr_memo *memo_of(struct ks_usyms *u, Dwfl_Module *m, uint64_t a)
{
	struct addr_memo *e;
	const char *name;
	struct mod_shared *s;
	Dwarf_Addr bias;
	GElf_Off off;
	GElf_Sym sym;

	if (u->memo_cap) {
		e = &u->memo[memo_slot(u->memo, u->memo_cap, m, a)];
		if (e->m)
			return e;
	}
	if ((u->nmemo + 1) * 2 > u->memo_cap) {
		size_t cap = u->memo_cap ? u->memo_cap * 2 : 4096;
		struct addr_memo *t = calloc(cap, sizeof(*t));

		if (!t)
			return NULL;
		for (size_t i = 0; i < u->memo_cap; i++)
			if (u->memo[i].m)
				t[memo_slot(t, cap, u->memo[i].m, u->memo[i].a)] = u->memo[i];
		free(u->memo);
		u->memo = t;
		u->memo_cap = cap;
	}
	e = &u->memo[memo_slot(u->memo, u->memo_cap, m, a)];
	*e = (struct addr_memo){ .m = m, .a = a, .ninl = -1 };
	u->nmemo++;
	/* the file's first process answers: its symbol table is the one read */
	s = shared_of(u, m, false, &bias);
	if (s) {
		uint64_t sa = a - bias + s->bias;
		const struct ks_symtab_ent *t;

		if (!s->tab_tried) {
			s->tab_tried = true;
			/* no memory: an empty table, and libdwfl answers each address */
			if (ks_symtab_build(&s->tab, s->m))
				memset(&s->tab, 0, sizeof(s->tab));
		}
		t = ks_symtab_find(&s->tab, sa, &off);
		if (t) {
			e->name = symbol_name(t->name);
			return e;
		}
		/* a label may be the answer, or the table could not be read: libdwfl's own walk */
		name = off == UINT64_MAX || !s->tab.max_end
			       ? dwfl_module_addrinfo(s->m, sa, &off, &sym, NULL, NULL, NULL)
			       : NULL;
	} else {
		name = dwfl_module_addrinfo(m, a, &off, &sym, NULL, NULL, NULL);
	}
	if (name && *name)
		e->name = symbol_name(name);
	return e;
}

static struct uproc *find(struct ks_usyms *u, uint32_t pid)
{
	for (struct uproc *p = u->b[pid % NBUCKETS]; p; p = p->next)
		if (p->pid == pid)
			return p;
	return NULL;
}

static int cmp_jit(const void *a, const void *b)
{
	const struct jit_sym *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* /tmp/perf-PID.map, the JIT's own symbol list ("START SIZE name" in hex), in the process's root. */
static void jit_load(struct uproc *p)
{
	char path[96], line[1024];
	size_t cap = 0;
	FILE *f;

	jit_free(p);
	snprintf(path, sizeof(path), "%s/tmp/perf-%u.map", p->root, p->pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, size;
		int off = 0;

		if (sscanf(line, "%llx %llx %n", &start, &size, &off) < 2 || !off)
			continue;
		line[strcspn(line, "\n")] = 0;
		if (p->njit == cap) {
			struct jit_sym *n = realloc(p->jit, (cap ? cap * 2 : 64) * sizeof(*n));

			if (!n)
				break;
			p->jit = n;
			cap = cap ? cap * 2 : 64;
		}
		p->jit[p->njit].name = strdup(line + off);
		if (!p->jit[p->njit].name)
			break;
		p->jit[p->njit].start = start;
		p->jit[p->njit++].end = start + size;
	}
	fclose(f);
	if (p->njit > 1) /* an empty map leaves p->jit NULL, which qsort must not get */
		qsort(p->jit, p->njit, sizeof(*p->jit), cmp_jit);
}

static const char *jit_name(const struct uproc *p, uint64_t a)
{
	size_t i = ks_sym_upper(p->jit, p->njit, sizeof(*p->jit), a);

	return i && a < p->jit[i - 1].end ? p->jit[i - 1].name : NULL;
}

/*
 * The shared module of @m's file (its build-id), made with @m when @make
 * and there is none; *@bias @m's own.  NULL for a module without a
 * build-id or ELF: it answers for itself.
 */
static struct mod_shared *shared_of(struct ks_usyms *u, Dwfl_Module *m, bool make, Dwarf_Addr *bias)
{
	const unsigned char *bits;
	struct mod_shared *s, **b;
	GElf_Addr vaddr;
	uint32_t h = 0;
	int len;

	if (!dwfl_module_getelf(m, bias))
		return NULL;
	len = dwfl_module_build_id(m, &bits, &vaddr);
	if (len <= 0 || len > (int)sizeof(s->id))
		return NULL;
	for (int i = 0; i < len; i++)
		h = h * 31 + bits[i];
	b = &u->mods[h % MOD_BUCKETS];
	for (s = *b; s && (s->idlen != len || memcmp(s->id, bits, (size_t)len)); s = s->next)
		;
	if (s || !make)
		return s;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	memcpy(s->id, bits, (size_t)len);
	s->idlen = len;
	s->m = m;
	s->bias = *bias;
	s->next = *b;
	*b = s;
	return s;
}

/*
 * Opens each module's ELF file now, while /proc/PID/root still leads to
 * it, and the symbol table of those no other process has shown yet.
 */
static int open_module(Dwfl_Module *m, void **ud, const char *name, Dwarf_Addr start, void *arg)
{
	struct ks_usyms *u = arg;
	struct mod_shared *s;
	Dwarf_Addr bias;

	(void)ud, (void)name, (void)start;
	s = shared_of(u, m, true, &bias);
	if (!s || s->m == m)
		dwfl_module_getsymtab(m);
	return DWARF_CB_OK;
}

/*
 * /proc/PID/maps with each file path seen through the process's root, so
 * a container's libraries are its own, not the host's of the same name.
 */
static FILE *maps_through_root(const struct uproc *p, char **buf, size_t *len)
{
	char path[64], line[4096];
	FILE *in, *out;

	snprintf(path, sizeof(path), "/proc/%u/maps", p->pid);
	in = fopen(path, "re");
	if (!in)
		return NULL;
	out = open_memstream(buf, len);
	if (!out) {
		fclose(in);
		return NULL;
	}
	while (fgets(line, sizeof(line), in)) {
		char *slash = strchr(line, '/');

		if (slash && p->root[0])
			fprintf(out, "%.*s%s%s", (int)(slash - line), line, p->root, slash);
		else
			fputs(line, out);
	}
	fclose(in);
	if (fclose(out))
		return NULL;
	return fmemopen(*buf, *len, "r");
}

/*
 * The file at @name (as /proc/PID/maps names it, @dev and @ino) mapped at
 * [@start, @end) by @p: made and opened when no process has shown it yet;
 * NULL: no memory.  A file deleted since it was mapped is opened through
 * /proc/PID/map_files, the mapping itself.
 */
static struct ufile *file_of(struct ks_usyms *u, const struct uproc *p, uint64_t dev, uint64_t ino,
			     const char *name, uint64_t start, uint64_t end)
{
	struct ufile **b = &u->files[(dev * 31 + ino) % FILE_BUCKETS], *f;
	static const char deleted[] = " (deleted)";
	size_t l = strlen(name), dl = sizeof(deleted) - 1;
	bool gone = l > dl && !strcmp(name + l - dl, deleted);
	char mf[96];

	for (f = *b; f; f = f->next)
		if (f->dev == dev && f->ino == ino)
			return f;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->dev = dev;
	f->ino = ino;
	f->name = strndup(name, gone ? l - dl : l);
	if (gone) {
		snprintf(mf, sizeof(mf), "/proc/%u/map_files/%llx-%llx", p->pid, (unsigned long long)start,
			 (unsigned long long)end);
		f->path = strdup(mf);
	} else if (asprintf(&f->path, "%s%s", p->root, name) < 0) {
		f->path = NULL;
	}
	if (!f->name || !f->path) {
		free(f->name);
		free(f->path);
		free(f);
		return NULL;
	}
	f->fd = open(f->path, O_RDONLY | O_CLOEXEC);
	f->next = *b;
	*b = f;
	return f;
}

/*
 * Our own vDSO, as a file (a memfd) for libdwfl: every 64-bit process maps
 * the same image, whose end is that of its section headers.
 */
static struct ufile *vdso_file(struct ks_usyms *u, uint64_t size)
{
	const unsigned char *img = (const unsigned char *)getauxval(AT_SYSINFO_EHDR);
	const GElf_Ehdr *eh = (const GElf_Ehdr *)img;
	uint64_t len, page = (uint64_t)sysconf(_SC_PAGESIZE);
	struct ufile *f;

	if (!u->vdso_tried) {
		u->vdso_tried = true;
		if (!img || memcmp(img, ELFMAG, SELFMAG) || img[EI_CLASS] != ELFCLASS64)
			return NULL;
		len = eh->e_shoff + (uint64_t)eh->e_shnum * eh->e_shentsize;
		f = calloc(1, sizeof(*f));
		if (!f)
			return NULL;
		f->fd = memfd_create("vdso", MFD_CLOEXEC);
		f->name = strdup("[vdso]");
		f->path = strdup("[vdso]");
		if (f->fd < 0 || !f->name || !f->path || write(f->fd, img, len) != (ssize_t)len) {
			file_free(f);
			return NULL;
		}
		u->vdso = f;
		u->vdso_size = (len + page - 1) / page * page;
	}
	/* another image (a 32-bit process's) is not ours: left unknown */
	return u->vdso && u->vdso_size == size ? u->vdso : NULL;
}

static int cmp_umap(const void *a, const void *b)
{
	const struct umap *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Reads /proc/PID/maps whole into u->mbuf, NUL-terminated; 0 or negative errno. */
static int read_maps(struct ks_usyms *u, uint32_t pid)
{
	char path[64];
	size_t len = 0;
	ssize_t r;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	do {
		if (len + 4096 + 1 > u->mcap) {
			size_t cap = u->mcap ? u->mcap * 2 : 65536;
			char *n = realloc(u->mbuf, cap);

			if (!n) {
				close(fd);
				return -ENOMEM;
			}
			u->mbuf = n;
			u->mcap = cap;
		}
		r = read(fd, u->mbuf + len, u->mcap - len - 1);
		if (r > 0)
			len += (size_t)r;
	} while (r > 0 || (r < 0 && errno == EINTR));
	close(fd);
	if (r < 0)
		return errno == ESRCH ? -ESRCH : -errno;
	u->mbuf[len] = 0;
	return 0;
}

/* Appends @e to *@m (*@n of *@cap); -ENOMEM, *@m freed. */
static int umap_push(struct umap **m, size_t *n, size_t *cap, const struct umap *e)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 32;
		struct umap *g = realloc(*m, c * sizeof(*g));

		if (!g) {
			free(*m);
			*m = NULL;
			return -ENOMEM;
		}
		*m = g;
		*cap = c;
	}
	(*m)[(*n)++] = *e;
	return 0;
}

/*
 * Captures @p's executable file mappings (and the vDSO), opening the files
 * no process has shown yet.  Mappings already known that the maps no
 * longer have (unmapped since, where earlier samples may still be) are
 * kept.  0 or negative errno.
 */
static int capture_maps(struct ks_usyms *u, struct uproc *p)
{
	struct umap *m = NULL;
	size_t n = 0, cap = 0;
	char *line, *nl;
	int err = read_maps(u, p->pid);

	if (err)
		return err;
	for (line = u->mbuf; *line; line = nl ? nl + 1 : line + strlen(line)) {
		unsigned long long start, end, pgoff, ino;
		unsigned int maj, min;
		char perms[5];
		struct ufile *f;
		int off = 0;

		nl = strchr(line, '\n');
		if (nl)
			*nl = 0;
		if (sscanf(line, "%llx-%llx %4s %llx %x:%x %llu %n", &start, &end, perms, &pgoff, &maj, &min, &ino,
			   &off) < 7 ||
		    perms[2] != 'x' || !off)
			continue;
		if (ino)
			f = file_of(u, p, makedev(maj, min), ino, line + off, start, end);
		else if (!strcmp(line + off, "[vdso]"))
			f = vdso_file(u, end - start);
		else
			continue; /* anonymous: a JIT's code, named by its perf map */
		if (f && umap_push(&m, &n, &cap, &(struct umap){ start, end, pgoff, f }))
			return -ENOMEM;
	}
	/* a re-read: the old mappings the new ones do not overlap stay (both lists sorted; those kept go after) */
	for (size_t i = 0, j = 0, nnew = n; i < p->nmaps; i++) {
		while (j < nnew && m[j].end <= p->maps[i].start)
			j++;
		if (j < nnew && m[j].start < p->maps[i].end)
			continue;
		if (umap_push(&m, &n, &cap, &p->maps[i]))
			return -ENOMEM;
	}
	if (n > 1)
		qsort(m, n, sizeof(*m), cmp_umap);
	free(p->maps);
	p->maps = m;
	p->nmaps = n;
	return 0;
}

/* The module of @f, made from its file at the first address looked up in it; NULL: not an ELF file. */
static Dwfl_Module *file_module(struct ks_usyms *u, struct ufile *f)
{
	Dwarf_Addr bias;
	size_t nph;
	Elf *elf;

	if (f->tried)
		return f->m;
	f->tried = true;
	if (f->fd < 0 || !(f->dwfl = dwfl_begin(&file_cbs)))
		return NULL;
	dwfl_report_begin(f->dwfl);
	/* at the addresses it was linked at: a process's are translated by its mapping */
	f->m = dwfl_report_elf(f->dwfl, f->name, f->path, f->fd, 0, true);
	if (!f->m)
		close(f->fd); /* only taken on success */
	f->fd = -1;
	dwfl_report_end(f->dwfl, NULL, NULL);
	elf = f->m ? dwfl_module_getelf(f->m, &bias) : NULL;
	if (!elf || elf_getphdrnum(elf, &nph) || !(f->load = calloc(nph ? nph : 1, sizeof(*f->load)))) {
		f->m = NULL;
		return NULL;
	}
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD) {
			ph.p_vaddr += bias;
			f->load[f->nload++] = ph;
		}
	}
	/* the first file of its build-id reads the symbols and DWARF its copies use */
	shared_of(u, f->m, true, &bias);
	return f->m;
}

/*
 * The module and module address @ma of address @a of @p captured without
 * unwinding; NULL where no file is mapped (after one more read of the maps,
 * while the process lives, for a library it loaded since).
 */
static Dwfl_Module *map_module(struct ks_usyms *u, struct uproc *p, uint64_t a, uint64_t *ma)
{
	size_t i = ks_sym_upper(p->maps, p->nmaps, sizeof(*p->maps), a);
	const struct umap *mp = i ? &p->maps[i - 1] : NULL;
	Dwfl_Module *m;
	uint64_t off;

	if (!mp || a >= mp->end) {
		if (p->maps_reread)
			return NULL;
		p->maps_reread = true;
		if (capture_maps(u, p))
			return NULL;
		return map_module(u, p, a, ma);
	}
	m = file_module(u, mp->f);
	if (!m)
		return NULL;
	off = a - mp->start + mp->pgoff;
	*ma = off;
	for (size_t k = 0; k < mp->f->nload; k++) {
		const GElf_Phdr *ph = &mp->f->load[k];

		if (off >= ph->p_offset && off - ph->p_offset < ph->p_memsz) {
			*ma = off - ph->p_offset + ph->p_vaddr;
			break;
		}
	}
	return m;
}

/* The module of address @a of @p, *@ma the address in it; NULL: none. */
static Dwfl_Module *module_at(struct ks_usyms *u, struct uproc *p, uint64_t a, uint64_t *ma)
{
	*ma = a;
	if (u->unwind) {
		/* no Dwfl: the process was gone at its capture; else the newest view that maps @a */
		Dwfl_Module *m = p->dwfl ? dwfl_addrmodule(p->dwfl, a) : NULL;

		for (size_t k = p->nold; !m && k-- > 0;)
			m = dwfl_addrmodule(p->old[k], a);
		return m;
	}
	return p->nmaps || !p->maps_reread ? map_module(u, p, a, ma) : NULL;
}

/*
 * Unwinding: a Dwfl of @p's mappings now.  A view it had (before an exec)
 * is kept, not ended: the modules in it may be the shared ones other
 * processes' files use (mod_shared), and addresses sampled before the exec
 * are named from it.
 */
static int capture_dwfl(struct ks_usyms *u, struct uproc *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *maps = maps_through_root(p, &buf, &len);
	Dwfl *d = NULL, **old;
	int err = 0;

	uint64_t h;

	if (!maps) {
		err = errno == ENOENT ? -ESRCH : -errno;
		goto out;
	}
	h = ks_fnv1a(buf, len, KS_FNV1A_INIT);
	/* the same mappings as the view has (a pc in none of them, such as JIT code): no new view */
	if (p->dwfl && h == p->view_hash)
		goto out;
	d = dwfl_begin(&proc_cbs);
	if (!d) {
		err = -ENOMEM;
		goto out;
	}
	dwfl_report_begin(d);
	if (dwfl_linux_proc_maps_report(d, maps) != 0)
		err = -EIO;
	dwfl_report_end(d, NULL, NULL);
	if (p->dwfl) {
		old = realloc(p->old, (p->nold + 1) * sizeof(*old));
		if (!old) {
			dwfl_end(d);
			err = -ENOMEM;
			goto out;
		}
		p->old = old;
		p->old[p->nold++] = p->dwfl;
	}
	p->dwfl = d;
	p->view_hash = h;
	p->attached = p->attach_failed = false; /* the new view is attached at its first unwind */
	dwfl_getmodules(d, open_module, u, 0);
	jit_load(p);
out:
	if (maps)
		fclose(maps);
	free(buf);
	return err;
}

void ks_usyms_refresh(struct ks_usyms *u)
{
	for (int i = 0; u->exec_rereads && i < NBUCKETS; i++)
		for (struct uproc *p = u->b[i]; p; p = p->next)
			if (p->exec_reread) {
				p->exec_reread = false;
				u->exec_rereads--;
				/* gone since: the first read stands */
				if (u->unwind)
					capture_dwfl(u, p);
				else
					capture_maps(u, p);
			}
}

int ks_usyms_capture(struct ks_usyms *u, uint32_t pid)
{
	struct stat a;
	struct uproc *p;
	char path[64];
	int err = 0;

	p = find(u, pid);
	if (p) {
		/*
		 * Announced again: it exec'd (or the kernel's list forgot it); its
		 * new mappings join the old (unwinding: a new view, the old one
		 * kept for addresses sampled before).  The sample that announced it may be
		 * inside the exec, before the new program is mapped (3 runs in 8
		 * had every sample after the exec [unknown]): the maps are read
		 * again at the next ks_usyms_refresh, a drain later, and an address
		 * outside them may read them once more.
		 */
		if (u->unwind ? p->dwfl != NULL : p->nmaps != 0) {
			p->maps_reread = false;
			p->view_rereads = 0;
			if (!p->exec_reread) {
				p->exec_reread = true;
				u->exec_rereads++;
			}
			return u->unwind ? capture_dwfl(u, p) : capture_maps(u, p);
		}
		return 0;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->pid = pid;
	p->next = u->b[pid % NBUCKETS];
	u->b[pid % NBUCKETS] = p;
	snprintf(path, sizeof(path), "/proc/%u/root", pid);
	if (!stat(path, &a) && (a.st_dev != u->root_dev || a.st_ino != u->root_ino))
		snprintf(p->root, sizeof(p->root), "/proc/%u/root", pid);
	if (!u->unwind) {
		err = capture_maps(u, p);
		if (err == -ESRCH)
			p->maps_reread = true; /* gone: nothing more to read */
		jit_load(p);
		return err;
	}
	return capture_dwfl(u, p);
}

int ks_usyms_mapped(struct ks_usyms *u, uint32_t pid)
{
	struct uproc *p = find(u, pid);

	if (!p)
		return ks_usyms_capture(u, pid);
	if (u->unwind || !p->nmaps)
		return 0;
	return capture_maps(u, p);
}

enum ks_ufr_kind ks_usyms_name(struct ks_usyms *u, uint32_t pid, uint64_t pc, bool ret, char *buf,
			       size_t len)
{
	struct uproc *p = find(u, pid);
	uint64_t a = ret && pc ? pc - 1 : pc;
	const char *name, *mod, *base;
	Dwfl_Module *m;
	uint64_t ma;

	if (!p) {
		ks_usyms_capture(u, pid);
		p = find(u, pid);
	}
	m = p ? module_at(u, p, a, &ma) : NULL;
	if (m) {
		struct addr_memo *e = memo_of(u, m, ma);

		if (e && e->name) {
			snprintf(buf, len, "%s", e->name);
			return KS_UFR_USER;
		}
		mod = dwfl_module_info(m, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
		base = mod ? strrchr(mod, '/') : NULL;
		snprintf(buf, len, "[unknown] (%s)", base ? base + 1 : mod ? mod : "?");
		return KS_UFR_USER;
	}
	if (p) {
		name = jit_name(p, a);
		if (!name && !p->jit_reloaded) {
			/* the JIT adds to its map as it compiles: read it once more */
			p->jit_reloaded = true;
			jit_load(p);
			name = jit_name(p, a);
		}
		if (name) {
			snprintf(buf, len, "%s", name);
			return KS_UFR_JIT;
		}
	}
	snprintf(buf, len, "[unknown]");
	return KS_UFR_USER;
}

/*
 * The compile unit at address @a of module @m, from its file's shared
 * DWARF (mod_shared: opened through the first process's module, once);
 * *@addr its DWARF address.  Modules without a build-id use their own.
 */
static Dwarf_Die *cu_of(struct ks_usyms *u, Dwfl_Module *m, uint64_t a, Dwarf_Die *mem, Dwarf_Addr *addr)
{
	Dwarf_Addr bias, dbias;
	struct mod_shared *s = shared_of(u, m, true, &bias);

	if (!s) {
		Dwarf_Die *cu = dwfl_module_addrdie(m, a, &dbias);

		*addr = a - dbias;
		return cu;
	}
	if (!s->dw_tried) {
		s->dw_tried = true;
		s->dw = dwfl_module_getdwarf(s->m, &s->dbias);
	}
	if (!s->dw)
		return NULL;
	/* the same place in the first process's copy, then its DWARF bias */
	*addr = a - bias + s->bias - s->dbias;
	return dwarf_addrdie(s->dw, *addr, mem);
}

/* The inlined calls at @a of module @m, innermost first, from the module's DWARF; how many. */
static int inlines_of(struct ks_usyms *u, Dwfl_Module *m, uint64_t a, ks_uinline_name *names, int max)
{
	Dwarf_Die mem, *cu, *scopes = NULL;
	Dwarf_Addr addr;
	int ns, k = 0;

	cu = m ? cu_of(u, m, a, &mem, &addr) : NULL;
	if (!cu)
		return 0;
	ns = dwarf_getscopes(cu, addr, &scopes);
	/* scopes run from the innermost out; the first subprogram is the physical function */
	for (int i = 0; i < ns && k < max; i++) {
		Dwarf_Attribute at;
		const char *name = NULL;
		int tag = dwarf_tag(&scopes[i]);

		if (tag == DW_TAG_subprogram)
			break;
		if (tag != DW_TAG_inlined_subroutine)
			continue;
		/* the name is the abstract origin's: dwarf_attr_integrate follows it */
		if (dwarf_attr_integrate(&scopes[i], DW_AT_name, &at))
			name = dwarf_formstring(&at);
		snprintf(names[k++], sizeof(names[0]), "%s", name ? name : "[inlined]");
	}
	free(scopes);
	return k;
}

int ks_usyms_inlines(struct ks_usyms *u, uint32_t pid, uint64_t pc, bool ret, ks_uinline_name *names, int max)
{
	struct uproc *p = find(u, pid);
	uint64_t a = ret && pc ? pc - 1 : pc;
	ks_uinline_name in[KS_UINLINE_MAX];
	uint64_t ma;
	Dwfl_Module *m = p && max > 0 ? module_at(u, p, a, &ma) : NULL;
	struct addr_memo *e = m ? memo_of(u, m, ma) : NULL;
	size_t off = 0;
	int n;

	if (!e)
		return 0;
	if (e->ninl < 0) {
		e->ninl = 0;
		n = inlines_of(u, m, ma, in, KS_UINLINE_MAX);
		for (int i = 0; i < n; i++)
			off += strlen(in[i]) + 1;
		if (n && (e->inl = malloc(off))) {
			off = 0;
			/* kept outermost first, as they are given */
			for (int i = n - 1; i >= 0; i--) {
				size_t l = strlen(in[i]) + 1;

				memcpy(e->inl + off, in[i], l);
				off += l;
			}
			e->ninl = n;
		}
	}
	n = e->ninl < max ? e->ninl : max;
	off = 0;
	for (int i = 0; i < n; i++) {
		snprintf(names[i], sizeof(names[0]), "%s", e->inl + off);
		off += strlen(e->inl + off) + 1;
	}
	return n;
}

/* The thread callbacks: one thread, the sample's, whose memory is the copied stack. */
static pid_t next_thread(Dwfl *d, void *arg, void **thread_argp)
{
	struct uproc *p = arg;

	(void)d;
	if (*thread_argp)
		return 0;
	*thread_argp = p;
	return p->tid;
}

static bool get_thread(Dwfl *d, pid_t tid, void *arg, void **thread_argp)
{
	struct uproc *p = arg;

	(void)d;
	*thread_argp = p;
	return (uint32_t)tid == p->tid;
}

static bool memory_read(Dwfl *d, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct uproc *p = arg;
	uint64_t sp = p->regs[7];

	(void)d;
	if (addr < sp || addr - sp + sizeof(*result) > p->len)
		return false;
	memcpy(result, p->stack + (addr - sp), sizeof(*result));
	return true;
}

static bool set_initial_registers(Dwfl_Thread *t, void *arg)
{
	struct uproc *p = arg;

	dwfl_thread_state_register_pc(t, p->regs[16]);
	return dwfl_thread_state_registers(t, 0, 17, (const Dwarf_Word *)p->regs);
}

static const Dwfl_Thread_Callbacks thread_cbs = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

struct unwind_out {
	uint64_t *pcs;
	bool *is_ret;
	int n, max;
};

static int frame_cb(Dwfl_Frame *f, void *arg)
{
	struct unwind_out *o = arg;
	Dwarf_Addr pc;
	bool act;

	if (!dwfl_frame_pc(f, &pc, &act) || !pc)
		return DWARF_CB_ABORT;
	o->pcs[o->n] = pc;
	o->is_ret[o->n] = !act;
	return ++o->n < o->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

/*
 * A view read again for a pc in none of its modules: at most 8 times
 * since the last exec, 50 ms apart.  Once was not enough: under
 * emulation (the 6.1 guest) the second read also came before ld.so had
 * mapped libc, and every later sample stopped there.  The bound keeps a
 * process whose pcs are never in a module (JIT code) from reading its maps
 * at every sample (and its views, all kept, from growing).  1 when read.
 */
static int reread_view(struct ks_usyms *u, struct uproc *p)
{
	struct timespec ts;
	uint64_t now;

	if (p->view_rereads >= 8)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	if (p->view_rereads && now - p->view_read_ns < 50000000ull)
		return 0;
	p->view_rereads++;
	p->view_read_ns = now;
	capture_dwfl(u, p);
	return 1;
}

/* One walk of the copied stack over @p's current view: the frames found (0: none, or no view). */
static int walk(struct uproc *p, uint32_t tid, const uint64_t *regs, const uint8_t *stack, uint32_t len,
		struct unwind_out *o)
{
	if (!p->dwfl || p->attach_failed)
		return 0;
	if (!p->attached) {
		if (!dwfl_attach_state(p->dwfl, NULL, p->pid, &thread_cbs, p)) {
			p->attach_failed = true;
			return 0;
		}
		p->attached = true;
	}
	p->tid = tid;
	p->regs = regs;
	p->stack = stack;
	p->len = len;
	dwfl_getthread_frames(p->dwfl, tid, frame_cb, o);
	p->regs = NULL;
	p->stack = NULL;
	return o->n;
}

int ks_usyms_unwind(struct ks_usyms *u, uint32_t pid, uint32_t tid, const uint64_t *regs,
		    const uint8_t *stack, uint32_t len, uint64_t *pcs, bool *is_ret, int max)
{
	struct unwind_out o = { pcs, is_ret, 0, max };
	struct uproc *p;

	if (max <= 0 || !regs[16])
		return 0;
	/* the first frame needs no unwinding: it is there even when the rest cannot be had */
	pcs[0] = regs[16];
	is_ret[0] = false;
	p = find(u, pid);
	if (!p) {
		ks_usyms_capture(u, pid);
		p = find(u, pid);
	}
	if (!p)
		return 1;
	/*
	 * A pc in no module of the view, the sampled one or a caller's where
	 * the walk stopped: a library loaded since, or a view read inside an
	 * exec (the announcing sample is often there, and this one is consumed
	 * later), before the new program or, a moment later, its libraries
	 * were mapped.  The maps are read once more (reread_view) and the
	 * stack walked again.
	 */
	if (p->dwfl && !dwfl_addrmodule(p->dwfl, regs[16]))
		reread_view(u, p);
	o.n = walk(p, tid, regs, stack, len, &o);
	if (o.n > 1 && o.n < max && p->dwfl && !dwfl_addrmodule(p->dwfl, pcs[o.n - 1] - (is_ret[o.n - 1] ? 1 : 0)) &&
	    reread_view(u, p)) {
		o.n = 0; /* walk() fills from o.n */
		o.n = walk(p, tid, regs, stack, len, &o);
	}
	return o.n ? o.n : 1;
}

/* The source lines at @a of module @m into @w (see struct ks_uwhere): the address's own, then each inlined call's call site. */
static void lines_of(struct ks_usyms *u, Dwfl_Module *m, uint64_t a, struct ks_uwhere *w)
{
	Dwarf_Die mem, *cu, *scopes = NULL;
	Dwarf_Addr addr;
	Dwarf_Files *files = NULL;
	size_t nfiles = 0;
	Dwarf_Line *line;
	int ns, lineno = 0;

	w->nlines = 0;
	cu = cu_of(u, m, a, &mem, &addr);
	line = cu ? dwarf_getsrc_die(cu, addr) : NULL;
	if (!line)
		return;
	w->lines[0].file = dwarf_linesrc(line, NULL, NULL);
	w->comp_dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &(Dwarf_Attribute){ 0 }));
	dwarf_lineno(line, &lineno);
	w->lines[0].line = lineno;
	w->nlines = 1;
	if (dwarf_getsrcfiles(cu, &files, &nfiles))
		files = NULL;
	ns = dwarf_getscopes(cu, addr, &scopes);
	/* as inlines_of walks them: innermost out, to the physical function */
	for (int i = 0; i < ns && w->nlines < KS_UINLINE_MAX + 1; i++) {
		int tag = dwarf_tag(&scopes[i]);
		Dwarf_Attribute at;
		Dwarf_Word fidx = 0, cl = 0;

		if (tag == DW_TAG_subprogram)
			break;
		if (tag != DW_TAG_inlined_subroutine)
			continue;
		if (dwarf_attr(&scopes[i], DW_AT_call_file, &at))
			dwarf_formudata(&at, &fidx);
		if (dwarf_attr(&scopes[i], DW_AT_call_line, &at))
			dwarf_formudata(&at, &cl);
		w->lines[w->nlines].file = files && fidx < nfiles ? dwarf_filesrc(files, fidx, NULL, NULL) : NULL;
		w->lines[w->nlines++].line = (int)cl;
	}
	free(scopes);
}

int ks_usyms_where(struct ks_usyms *u, uint32_t pid, uint64_t pc, bool ret, struct ks_uwhere *w)
{
	struct uproc *p = find(u, pid);
	uint64_t a = ret && pc ? pc - 1 : pc, ma;
	Dwfl_Module *m = p ? module_at(u, p, a, &ma) : NULL;
	const unsigned char *bits;
	GElf_Addr vaddr;
	int len;

	memset(w, 0, sizeof(*w));
	if (!m)
		return -ENOENT;
	if (u->unwind) {
		/* libdwfl's module spans the file's mappings from the first, at offset 0 */
		Dwarf_Addr start, end;

		w->file = dwfl_module_info(m, NULL, &start, &end, NULL, NULL, NULL, NULL);
		w->start = start;
		w->limit = end;
	} else {
		size_t i = ks_sym_upper(p->maps, p->nmaps, sizeof(*p->maps), a);
		const struct umap *mp = &p->maps[i - 1]; /* module_at found it there */

		w->start = mp->start;
		w->limit = mp->end;
		w->offset = mp->pgoff;
		w->file = mp->f->name;
	}
	len = dwfl_module_build_id(m, &bits, &vaddr);
	if (len > 0 && len <= (int)sizeof(w->build_id)) {
		memcpy(w->build_id, bits, (size_t)len);
		w->build_id_len = len;
	}
	lines_of(u, m, ma, w);
	return 0;
}
