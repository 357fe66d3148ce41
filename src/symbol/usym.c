/* User-space symbols and DWARF unwinding with elfutils libdwfl: one Dwfl per process, captured while it is alive. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include "symbol/symbol.h"

#define NBUCKETS 1024

struct jit_sym {
	uint64_t start, end;
	char *name;
};

/* One address's inlined calls, kept: names joined by '\0', n of them (a direct-mapped slot). */
struct inl_entry {
	uint64_t a;
	char *names;
	int n;
	bool used;
};
#define INL_SLOTS 512

struct uproc {
	uint32_t pid;
	Dwfl *dwfl; /* NULL: the process was gone before it could be captured */
	bool attached, attach_failed, jit_reloaded;
	struct jit_sym *jit;
	size_t njit;
	char root[32]; /* "/proc/PID/root" when the process sees another root (a container), else "" */
	struct inl_entry *inl; /* ks_usyms_inlines' answers, INL_SLOTS, made at the first question */
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
	struct mod_shared *next;
};
#define MOD_BUCKETS 256

struct ks_usyms {
	struct uproc *b[NBUCKETS];
	struct mod_shared *mods[MOD_BUCKETS];
};

/* NULL: libdwfl's default path (the file's directory, .debug/, /usr/lib/debug and its .build-id tree) */
static char *debuginfo_path;

static const Dwfl_Callbacks proc_cbs = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.debuginfo_path = &debuginfo_path,
};

struct ks_usyms *ks_usyms_new(void)
{
	return calloc(1, sizeof(struct ks_usyms));
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
			for (int i = 0; p->inl && i < INL_SLOTS; i++)
				free(p->inl[i].names);
			free(p->inl);
			jit_free(p);
			free(p);
		}
	}
	for (int i = 0; i < MOD_BUCKETS; i++) {
		for (struct mod_shared *s = u->mods[i], *n; s; s = n) {
			n = s->next;
			free(s);
		}
	}
	free(u);
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

int ks_usyms_capture(struct ks_usyms *u, uint32_t pid)
{
	struct stat a, b;
	struct uproc *p;
	char path[64], *buf = NULL;
	size_t len = 0;
	FILE *maps;
	int err = 0;

	if (find(u, pid))
		return 0;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->pid = pid;
	p->next = u->b[pid % NBUCKETS];
	u->b[pid % NBUCKETS] = p;
	snprintf(path, sizeof(path), "/proc/%u/root", pid);
	if (!stat(path, &a) && !stat("/", &b) && (a.st_dev != b.st_dev || a.st_ino != b.st_ino))
		snprintf(p->root, sizeof(p->root), "/proc/%u/root", pid);
	maps = maps_through_root(p, &buf, &len);
	if (!maps) {
		err = errno == ENOENT ? -ESRCH : -errno;
		goto out;
	}
	p->dwfl = dwfl_begin(&proc_cbs);
	if (!p->dwfl) {
		err = -ENOMEM;
		goto out;
	}
	dwfl_report_begin(p->dwfl);
	if (dwfl_linux_proc_maps_report(p->dwfl, maps) != 0)
		err = -EIO;
	dwfl_report_end(p->dwfl, NULL, NULL);
	dwfl_getmodules(p->dwfl, open_module, u, 0);
	jit_load(p);
out:
	if (maps)
		fclose(maps);
	free(buf);
	return err;
}

enum ks_ufr_kind ks_usyms_name(struct ks_usyms *u, uint32_t pid, uint64_t pc, bool ret, char *buf,
			       size_t len)
{
	struct uproc *p = find(u, pid);
	uint64_t a = ret && pc ? pc - 1 : pc;
	const char *name, *mod, *base;
	Dwfl_Module *m;

	if (!p) {
		ks_usyms_capture(u, pid);
		p = find(u, pid);
	}
	m = p && p->dwfl ? dwfl_addrmodule(p->dwfl, a) : NULL;
	if (m) {
		struct mod_shared *s;
		Dwarf_Addr bias;
		GElf_Off off;
		GElf_Sym sym;

		/* the file's first process answers: its symbol table is the one read */
		s = shared_of(u, m, false, &bias);
		if (s)
			name = dwfl_module_addrinfo(s->m, a - bias + s->bias, &off, &sym, NULL, NULL, NULL);
		else
			name = dwfl_module_addrinfo(m, a, &off, &sym, NULL, NULL, NULL);
		if (name && *name) {
			/* a dynamic symbol's version ("@@GLIBC_2.34") is not part of the function's name */
			const char *at = strchr(name + 1, '@');

			snprintf(buf, len, "%.*s", at ? (int)(at - name) : (int)strlen(name), name);
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

/* The inlined calls at @a, innermost first, from the module's DWARF; how many. */
static int inlines_of(struct ks_usyms *u, Dwfl *dwfl, uint64_t a, ks_uinline_name *names, int max)
{
	Dwfl_Module *m = dwfl_addrmodule(dwfl, a);
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
	struct inl_entry *e;
	size_t off = 0;
	int n;

	if (!p || !p->dwfl || max <= 0)
		return 0;
	if (!p->inl && !(p->inl = calloc(INL_SLOTS, sizeof(*p->inl))))
		return 0;
	e = &p->inl[(a ^ (a >> 9)) % INL_SLOTS];
	if (!e->used || e->a != a) {
		free(e->names);
		*e = (struct inl_entry){ .a = a, .used = true };
		n = inlines_of(u, p->dwfl, a, in, KS_UINLINE_MAX);
		for (int i = 0; i < n; i++)
			off += strlen(in[i]) + 1;
		if (n && (e->names = malloc(off))) {
			off = 0;
			/* kept outermost first, as they are given */
			for (int i = n - 1; i >= 0; i--) {
				size_t l = strlen(in[i]) + 1;

				memcpy(e->names + off, in[i], l);
				off += l;
			}
			e->n = n;
		}
	}
	n = e->n < max ? e->n : max;
	off = 0;
	for (int i = 0; i < n; i++) {
		snprintf(names[i], sizeof(names[0]), "%s", e->names + off);
		off += strlen(e->names + off) + 1;
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
	if (!p || !p->dwfl || p->attach_failed)
		return 1;
	if (!p->attached) {
		if (!dwfl_attach_state(p->dwfl, NULL, pid, &thread_cbs, p)) {
			p->attach_failed = true;
			return 1;
		}
		p->attached = true;
	}
	p->tid = tid;
	p->regs = regs;
	p->stack = stack;
	p->len = len;
	dwfl_getthread_frames(p->dwfl, tid, frame_cb, &o);
	p->regs = NULL;
	p->stack = NULL;
	return o.n ? o.n : 1;
}
