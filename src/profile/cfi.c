/* --call-graph cfi: .eh_frame/.debug_frame CFI compiled with libdw into the compact rows bpf/profile.bpf.c walks, and their loading per process. */
#include <dwarf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include "core/log.h"
#include "core/parse.h"
#include "profile/cfi.h"
#include "symbol/debugcache.h"

/* x86-64 DWARF register numbers */
#define R_RBP 6
#define R_RSP 7
#define R_RA 16

void ks_cfi_table_free(struct ks_cfi_table *t)
{
	free(t->rows);
	memset(t, 0, sizeof(*t));
}

static int push_row(struct ks_cfi_table *t, size_t *cap, const struct ks_cfi_row *r)
{
	struct ks_cfi_row *last = t->n ? &t->rows[t->n - 1] : NULL;

	/* the same rule as the row before: that row holds on (the table's size is the walker's memory) */
	if (last && last->kind == r->kind && last->cfa_off == r->cfa_off && last->rbp_off == r->rbp_off)
		return 0;
	/* a row at the same pc replaces it (an empty range, or a gap's end that is the next FDE's start) */
	if (last && last->pc == r->pc) {
		*last = *r;
		return 0;
	}
	if (t->n == *cap) {
		size_t nc = *cap ? *cap * 2 : 1024;
		struct ks_cfi_row *n = realloc(t->rows, nc * sizeof(*n));

		if (!n)
			return -ENOMEM;
		t->rows = n;
		*cap = nc;
	}
	t->rows[t->n++] = *r;
	return 0;
}

/*
 * The PLT's CFA expression (GNU ld's .plt: each 16-byte entry pushes once
 * at its 11th byte, 10th in some variants): DW_OP_breg7 8; DW_OP_breg16 0;
 * DW_OP_lit15; DW_OP_and; DW_OP_litN; DW_OP_ge; DW_OP_lit3; DW_OP_shl;
 * DW_OP_plus.  N (the threshold) goes in @thr.
 */
static bool plt_expr(const Dwarf_Op *o, size_t n, int *off, int *thr)
{
	if (n != 9 || o[0].atom != DW_OP_breg7 || o[1].atom != DW_OP_breg16 || o[1].number != 0 ||
	    o[2].atom != DW_OP_lit15 || o[3].atom != DW_OP_and || o[4].atom < DW_OP_lit0 || o[4].atom > DW_OP_lit31 ||
	    o[5].atom != DW_OP_ge || o[6].atom != DW_OP_lit3 || o[7].atom != DW_OP_shl || o[8].atom != DW_OP_plus)
		return false;
	*off = (int)(int64_t)o[0].number;
	*thr = o[4].atom - DW_OP_lit0;
	return true;
}

/*
 * Where a DW_CFA_expression rule says register @reg is saved: at rsp + *off
 * (DW_OP_breg7 off; libdw puts the DW_OP_call_frame_cfa DWARF pushes before
 * such an expression first).  False for any other rule.
 */
static bool saved_at_rsp(Dwarf_Frame *f, int reg, int64_t *off)
{
	Dwarf_Op mem[3], *ops;
	size_t nops;

	if (dwarf_frame_register(f, reg, mem, &ops, &nops) || !nops)
		return false;
	if (nops == 2 && ops[0].atom == DW_OP_call_frame_cfa) {
		ops++;
		nops--;
	}
	if (nops != 1 || ops[0].atom != DW_OP_breg7)
		return false;
	*off = (int64_t)ops[0].number;
	return true;
}

/*
 * A signal frame's row (the CIE's 'S' augmentation; x86-64 Linux: glibc's
 * __restore_rt, where the handler returns): the kernel pushed a ucontext,
 * and its CFI says CFA = *(rsp + N) (DW_OP_breg7 N; DW_OP_deref: the saved
 * rsp), each register saved at rsp + M.  Recognized by that shape, not by
 * a symbol name.  The walker reads the saved rsp and rip as one 16-byte
 * read, so rip must follow rsp (the order of the kernel's sigcontext:
 * ..., rsp, rip); rbp's slot must be a multiple of 8 within the row's 8
 * bits.  False for anything else (a row that ends the walk, as before).
 */
static bool signal_row(Dwarf_Frame *f, struct ks_cfi_row *r)
{
	Dwarf_Addr s, e;
	Dwarf_Op *ops;
	size_t nops;
	bool sig = false;
	int64_t sp_off, ip_off, bp_off = 0, v;

	if (dwarf_frame_info(f, &s, &e, &sig) < 0 || !sig)
		return false;
	if (dwarf_frame_cfa(f, &ops, &nops) || nops != 2 || ops[0].atom != DW_OP_breg7 || ops[1].atom != DW_OP_deref)
		return false;
	sp_off = (int64_t)ops[0].number;
	if (sp_off < 0 || sp_off > INT16_MAX || sp_off % 8)
		return false;
	/* the caller's rsp is the CFA (no rule), or said again to be that same slot */
	if (saved_at_rsp(f, R_RSP, &v) && v != sp_off)
		return false;
	if (!saved_at_rsp(f, R_RA, &ip_off) || ip_off != sp_off + 8)
		return false;
	/* rbp: at its slot, or (no rule) kept, as rbp_off 0 says in every row */
	if (saved_at_rsp(f, R_RBP, &bp_off) && (bp_off <= 0 || bp_off % 8 || bp_off / 8 > INT8_MAX))
		return false;
	r->kind = KS_CFI_SIGNAL;
	r->cfa_off = (int16_t)sp_off;
	r->rbp_off = (int8_t)(bp_off / 8);
	return true;
}

/* The row of @f at @pc: the CFA's rule, rbp's, and the return address's (which must be at CFA - 8). */
static void frame_row(Dwarf_Frame *f, uint64_t pc, struct ks_cfi_row *r, struct ks_cfi_table *t)
{
	Dwarf_Op mem[3], *ops;
	size_t nops;
	int64_t off;
	int poff, thr;

	memset(r, 0, sizeof(*r));
	r->pc = (uint32_t)pc;
	r->kind = KS_CFI_UNSUP;
	if (signal_row(f, r))
		return;
	/* the return address: undefined at the outermost frame; otherwise it must be CFA - 8 */
	if (dwarf_frame_register(f, R_RA, mem, &ops, &nops))
		goto unsup;
	if (nops == 0 && ops == mem) {
		r->kind = KS_CFI_END;
		return;
	}
	if (nops != 2 || ops[0].atom != DW_OP_call_frame_cfa || ops[1].atom != DW_OP_plus_uconst ||
	    (int64_t)ops[1].number != -8)
		goto unsup;
	if (dwarf_frame_cfa(f, &ops, &nops) || nops == 0)
		goto unsup;
	/* a register + offset rule: libdw gives it as DW_OP_bregx reg, off (an expression may say breg7/breg6) */
	if (nops == 1 && (ops[0].atom == DW_OP_bregx || ops[0].atom == DW_OP_breg7 || ops[0].atom == DW_OP_breg6)) {
		int reg = ops[0].atom == DW_OP_bregx ? (int)ops[0].number : ops[0].atom - DW_OP_breg0;

		off = (int64_t)(ops[0].atom == DW_OP_bregx ? ops[0].number2 : ops[0].number);
		if ((reg != R_RSP && reg != R_RBP) || off < INT16_MIN || off > INT16_MAX)
			goto unsup;
		r->kind = reg == R_RSP ? KS_CFI_RSP : KS_CFI_RBP;
		r->cfa_off = (int16_t)off;
	} else if (plt_expr(ops, nops, &poff, &thr)) {
		r->kind = KS_CFI_PLT;
		r->cfa_off = (int16_t)poff;
		r->rbp_off = (int8_t)thr;
		t->plt++;
		return; /* rbp: the PLT does not touch it */
	} else {
		goto unsup;
	}
	/* rbp: unchanged (same value, or undefined: the walker keeps what it has), or saved at CFA + off */
	if (dwarf_frame_register(f, R_RBP, mem, &ops, &nops))
		goto unsup;
	if (nops == 0)
		return;
	if (nops == 1 && ops[0].atom == DW_OP_call_frame_cfa)
		off = 0;
	else if (nops == 2 && ops[0].atom == DW_OP_call_frame_cfa && ops[1].atom == DW_OP_plus_uconst)
		off = (int64_t)ops[1].number;
	else
		goto unsup;
	if (off % 8 || off / 8 < INT8_MIN || off / 8 > INT8_MAX || off == 0)
		goto unsup;
	r->rbp_off = (int8_t)(off / 8);
	return;
unsup:
	r->kind = KS_CFI_UNSUP;
	r->cfa_off = 0;
	r->rbp_off = 0;
	t->unsup++;
}

/*
 * Rows for every FDE starting at @starts[0..n) (sorted): each FDE's rows
 * from libdw, one address range after another, and a KS_CFI_NONE row
 * wherever no FDE covers.
 */
static int compile_starts(Dwarf_CFI *cfi, const uint64_t *starts, size_t n, struct ks_cfi_table *t)
{
	size_t cap = 0, i = 0;
	uint64_t addr;
	struct ks_cfi_row r;
	int err;

	if (!n)
		return -ENODATA;
	addr = starts[0];
	for (;;) {
		Dwarf_Frame *f = NULL;
		Dwarf_Addr s, e;

		if (addr > UINT32_MAX)
			return -ERANGE;
		if (!dwarf_cfi_addrframe(cfi, addr, &f) && dwarf_frame_info(f, &s, &e, NULL) >= 0 && e > addr) {
			frame_row(f, addr, &r, t);
			free(f);
			err = push_row(t, &cap, &r);
			if (err)
				return err;
			addr = e;
			continue;
		}
		free(f);
		/* no FDE covers addr: none up to the next one's start */
		memset(&r, 0, sizeof(r));
		r.pc = (uint32_t)addr;
		r.kind = KS_CFI_NONE;
		err = push_row(t, &cap, &r);
		if (err)
			return err;
		while (i < n && starts[i] <= addr)
			i++;
		if (i == n)
			return 0;
		addr = starts[i];
	}
}

/* Reads a DW_EH_PE-encoded pointer at *@p (fixed sizes only); @base is the section's address; false: unsupported. */
static bool eh_ptr(const uint8_t **p, const uint8_t *end, uint8_t enc, uint64_t pcaddr, uint64_t dataaddr, uint64_t *out)
{
	uint64_t v;
	int64_t sv;
	size_t sz;

	switch (enc & 0x0f) {
	case 0x00: case 0x04: case 0x0c: sz = 8; break;
	case 0x02: case 0x0a: sz = 2; break;
	case 0x03: case 0x0b: sz = 4; break;
	default: return false;
	}
	if (*p + sz > end)
		return false;
	switch (enc & 0x0f) {
	case 0x02: { uint16_t x; memcpy(&x, *p, 2); v = x; break; }
	case 0x0a: { int16_t x; memcpy(&x, *p, 2); sv = x; v = (uint64_t)sv; break; }
	case 0x03: { uint32_t x; memcpy(&x, *p, 4); v = x; break; }
	case 0x0b: { int32_t x; memcpy(&x, *p, 4); sv = x; v = (uint64_t)sv; break; }
	default: memcpy(&v, *p, 8); break;
	}
	switch (enc & 0x70) {
	case 0x00: break;
	case 0x10: v += pcaddr; break;
	case 0x30: v += dataaddr; break;
	default: return false;
	}
	*p += sz;
	*out = v;
	return true;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The FDEs' start addresses from .eh_frame_hdr's binary-search table (@d at address @addr). */
static int hdr_starts(const Elf_Data *d, uint64_t addr, uint64_t **out, size_t *n)
{
	const uint8_t *b = d->d_buf, *p = b + 4, *end = b + d->d_size;
	uint64_t ehp, count, *s;

	if (d->d_size < 4 || b[0] != 1 || b[2] == 0xff || b[3] == 0xff)
		return -ENODATA;
	if (!eh_ptr(&p, end, b[1], addr + (p - b), addr, &ehp) || !eh_ptr(&p, end, b[2], addr + (p - b), addr, &count))
		return -ENODATA;
	if (count > (uint64_t)(end - p) / 8)
		return -ENODATA;
	s = malloc((count ? count : 1) * sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (uint64_t i = 0; i < count; i++) {
		uint64_t fde;

		if (!eh_ptr(&p, end, b[3], addr + (p - b), addr, &s[i]) || !eh_ptr(&p, end, b[3], addr + (p - b), addr, &fde)) {
			free(s);
			return -ENODATA;
		}
	}
	qsort(s, count, sizeof(*s), cmp_u64); /* sorted already, by the format; cheap to be sure */
	*out = s;
	*n = count;
	return 0;
}

/* The FDEs' start addresses in .debug_frame (@d): absolute, the address's size. */
static int debug_frame_starts(Elf *e, Elf_Data *d, uint64_t **out, size_t *n)
{
	const unsigned char *ident = (const unsigned char *)elf_getident(e, NULL);
	Dwarf_Off off = 0, next;
	Dwarf_CFI_Entry ent;
	size_t cap = 0, k = 0;
	uint64_t *s = NULL;

	if (!ident)
		return -ENOEXEC;
	while (dwarf_next_cfi(ident, d, false, off, &next, &ent) == 0) {
		if (ent.CIE_id != DW_CIE_ID_64 && ent.fde.start + 8 <= ent.fde.end) {
			if (k == cap) {
				uint64_t *ns = realloc(s, (cap = cap ? cap * 2 : 256) * sizeof(*s));

				if (!ns) {
					free(s);
					return -ENOMEM;
				}
				s = ns;
			}
			memcpy(&s[k++], ent.fde.start, 8);
		}
		off = next;
	}
	if (!k) {
		free(s);
		return -ENODATA;
	}
	qsort(s, k, sizeof(*s), cmp_u64);
	*out = s;
	*n = k;
	return 0;
}

static Elf_Scn *section(Elf *e, const char *name, GElf_Shdr *sh)
{
	size_t shstrndx;
	Elf_Scn *s = NULL;

	if (elf_getshdrstrndx(e, &shstrndx))
		return NULL;
	while ((s = elf_nextscn(e, s))) {
		const char *n;

		if (!gelf_getshdr(s, sh) || sh->sh_type == SHT_NOBITS)
			continue;
		n = elf_strptr(e, shstrndx, sh->sh_name);
		if (n && !strcmp(n, name))
			return s;
	}
	return NULL;
}

/* Compiles @e's CFI into @t (see ks_cfi_compile_fd). */
static int compile_elf(Elf *e, struct ks_cfi_table *t)
{
	GElf_Ehdr eh;
	GElf_Shdr sh;
	Elf_Scn *s;
	Elf_Data *d;
	Dwarf *dw = NULL;
	Dwarf_CFI *cfi = NULL;
	uint64_t *starts = NULL;
	size_t n = 0;
	int err;

	memset(t, 0, sizeof(*t));
	if (!gelf_getehdr(e, &eh) || eh.e_machine != EM_X86_64 || eh.e_ident[EI_CLASS] != ELFCLASS64) {
		err = -ENOEXEC;
		goto out;
	}
	err = -ENODATA;
	s = section(e, ".eh_frame_hdr", &sh);
	if (s && (d = elf_getdata(s, NULL)) && (cfi = dwarf_getcfi_elf(e)))
		err = hdr_starts(d, sh.sh_addr, &starts, &n);
	if (err == -ENODATA && (s = section(e, ".debug_frame", &sh)) && (d = elf_getdata(s, NULL))) {
		cfi = NULL;
		dw = dwarf_begin_elf(e, DWARF_C_READ, NULL);
		if (dw && (cfi = dwarf_getcfi(dw))) {
			err = debug_frame_starts(e, d, &starts, &n);
			t->debug_frame = true;
		}
	}
	if (err)
		goto out;
	t->fdes = n;
	err = compile_starts(cfi, starts, n, t);
out:
	if (err)
		ks_cfi_table_free(t);
	free(starts);
	if (dw)
		dwarf_end(dw);
	else if (cfi)
		dwarf_cfi_end(cfi);
	return err;
}

int ks_cfi_compile_fd(int fd, struct ks_cfi_table *t)
{
	struct ks_cfi_loads ld;

	return ks_cfi_table_fd(fd, false, t, &ld);
}

int ks_cfi_compile(const char *path, struct ks_cfi_table *t)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	err = ks_cfi_compile_fd(fd, t);
	close(fd);
	return err;
}

const struct ks_cfi_row *ks_cfi_lookup(const struct ks_cfi_table *t, uint64_t pc)
{
	size_t lo = 0, hi = t->n;

	if (!t->n || t->rows[0].pc > pc)
		return NULL;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->rows[mid].pc <= pc)
			lo = mid;
		else
			hi = mid;
	}
	return &t->rows[lo];
}

/* ---- the cache of compiled tables ---- */

/*
 * Why: compiling with libdw costs every run again (libc's 28k rows take
 * ~40 ms, gcc's cc1 478k 0.41 s): ~15% of a 10 s system-wide cfi
 * profile's whole CPU.  And a table depends on the file's content only.  So it is kept by the file's
 * build-id, with the debug cache's copies (symbol/debugcache.c), and later
 * runs read it.  A file without a build-id is compiled every time: no name
 * would tell a changed file from the one cached.
 *
 * An entry HEX.cfi is a cache_hdr, then the rows.  Everything in it is
 * checked at each read, and anything off (another version, a short file,
 * rows out of order, segments other than the file's own) means the table
 * is compiled again, and the entry rewritten.
 */
#define CACHE_MAGIC "KSCFITB"
/* Bump whenever the compiler's rows would come out otherwise (or cache_hdr changes): old entries are then refused. */
#define CACHE_VERSION 2

struct cache_hdr {
	char magic[8];
	uint32_t version;
	uint32_t row_size;	/* sizeof(struct ks_cfi_row) */
	uint64_t nrows;
	uint64_t fdes, unsup, plt; /* the table's counts, as compiled */
	uint32_t debug_frame;
	uint32_t nload;
	struct {
		uint64_t off, vaddr, filesz;
	} load[KS_CFI_LOADS];
};
_Static_assert(sizeof(struct cache_hdr) == 56 + 24 * KS_CFI_LOADS, "cache_hdr has no padding");

static int read_loads(Elf *e, struct ks_cfi_loads *ld)
{
	size_t np;

	memset(ld, 0, sizeof(*ld));
	if (elf_getphdrnum(e, &np))
		return -ENOEXEC;
	for (size_t i = 0; i < np && ld->n < KS_CFI_LOADS; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD) {
			ld->seg[ld->n].off = ph.p_offset;
			ld->seg[ld->n].vaddr = ph.p_vaddr;
			ld->seg[ld->n].filesz = ph.p_filesz;
			ld->n++;
		}
	}
	return 0;
}

static bool pread_all(int fd, void *buf, size_t n, off_t off)
{
	while (n) {
		ssize_t k = pread(fd, buf, n, off);

		if (k <= 0)
			return false;
		buf = (char *)buf + k;
		n -= (size_t)k;
		off += k;
	}
	return true;
}

/* Whether the rows are a table compile_starts could have made: pcs rising, known kinds, the last one KS_CFI_NONE. */
static bool rows_valid(const struct ks_cfi_row *r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (r[i].kind > KS_CFI_SIGNAL || (i && r[i].pc <= r[i - 1].pc))
			return false;
	return n && r[n - 1].kind == KS_CFI_NONE;
}

/* The cached table of build-id @bid for a file whose segments are @ld: 0, or negative errno (none, or not valid). */
static int cache_read(const void *bid, int len, const struct ks_cfi_loads *ld, struct ks_cfi_table *t)
{
	struct cache_hdr h;
	struct stat st;
	int fd = ks_debugcache_open(bid, len, "cfi", NULL), err = -EINVAL;

	memset(t, 0, sizeof(*t));
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) || (size_t)st.st_size < sizeof(h) || !pread_all(fd, &h, sizeof(h), 0))
		goto out;
	if (memcmp(h.magic, CACHE_MAGIC, sizeof(h.magic)) || h.version != CACHE_VERSION ||
	    h.row_size != sizeof(struct ks_cfi_row) || !h.nrows ||
	    h.nrows > ((uint64_t)st.st_size - sizeof(h)) / sizeof(struct ks_cfi_row) ||
	    sizeof(h) + h.nrows * sizeof(struct ks_cfi_row) != (uint64_t)st.st_size || h.debug_frame > 1)
		goto out;
	/* the same build-id with other segments (an address-changing tool that kept the note): not this file's table */
	if (h.nload != (uint32_t)ld->n)
		goto out;
	for (int i = 0; i < ld->n; i++)
		if (h.load[i].off != ld->seg[i].off || h.load[i].vaddr != ld->seg[i].vaddr ||
		    h.load[i].filesz != ld->seg[i].filesz)
			goto out;
	t->rows = malloc(h.nrows * sizeof(*t->rows));
	if (!t->rows) {
		err = -ENOMEM;
		goto out;
	}
	t->n = h.nrows;
	if (!pread_all(fd, t->rows, t->n * sizeof(*t->rows), sizeof(h)) || !rows_valid(t->rows, t->n)) {
		ks_cfi_table_free(t);
		goto out;
	}
	t->fdes = h.fdes;
	t->unsup = h.unsup;
	t->plt = h.plt;
	t->debug_frame = h.debug_frame;
	err = 0;
out:
	close(fd);
	return err;
}

static int cache_write(const void *bid, int len, const struct ks_cfi_loads *ld, const struct ks_cfi_table *t)
{
	struct cache_hdr h;
	struct iovec iov[2];

	memset(&h, 0, sizeof(h));
	memcpy(h.magic, CACHE_MAGIC, sizeof(h.magic));
	h.version = CACHE_VERSION;
	h.row_size = sizeof(struct ks_cfi_row);
	h.nrows = t->n;
	h.fdes = t->fdes;
	h.unsup = t->unsup;
	h.plt = t->plt;
	h.debug_frame = t->debug_frame;
	h.nload = (uint32_t)ld->n;
	for (int i = 0; i < ld->n; i++) {
		h.load[i].off = ld->seg[i].off;
		h.load[i].vaddr = ld->seg[i].vaddr;
		h.load[i].filesz = ld->seg[i].filesz;
	}
	iov[0] = (struct iovec){ &h, sizeof(h) };
	iov[1] = (struct iovec){ t->rows, t->n * sizeof(*t->rows) };
	return ks_debugcache_write(bid, len, "cfi", iov, 2);
}

int ks_cfi_table_fd(int fd, bool use_cache, struct ks_cfi_table *t, struct ks_cfi_loads *ld)
{
	const void *bid = NULL;
	ssize_t len = 0;
	Elf *e;
	int err;

	memset(t, 0, sizeof(*t));
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e)
		return -ENOEXEC;
	err = read_loads(e, ld);
	if (err)
		goto out;
	if (use_cache && ks_debugcache_dir())
		len = dwelf_elf_gnu_build_id(e, &bid);
	if (len > 0 && !cache_read(bid, (int)len, ld, t)) {
		err = 1;
		goto out;
	}
	err = compile_elf(e, t);
	/* best effort: without it, the next run compiles again (ksight -v's debug lines say why) */
	if (!err && len > 0)
		cache_write(bid, (int)len, ld, t);
out:
	elf_end(e);
	return err;
}

/* ---- loading per process ---- */

struct cfi_mod {
	uint64_t dev, ino;
	uint32_t row, nrows; /* in cfi_rows; nrows 0 and fp: did not fit */
	bool fp, none;	     /* fp: no room, frame pointers; none: no CFI (the walk stops there) */
	struct ks_cfi_loads ld; /* for the bias of a mapping of it */
};

struct ks_cfi_loader {
	struct ks_cfi_row *rows;
	uint32_t cap, used;
	int procs_fd;
	struct cfi_mod *mods;
	size_t nmods, capmods;
	struct ks_cfi_stats st;
};

struct ks_cfi_loader *ks_cfi_loader_new(struct ks_cfi_row *rows, uint32_t cap, int procs_fd)
{
	struct ks_cfi_loader *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->rows = rows;
	l->cap = cap;
	l->procs_fd = procs_fd;
	l->st.rows_cap = cap;
	return l;
}

void ks_cfi_loader_free(struct ks_cfi_loader *l)
{
	if (!l)
		return;
	free(l->mods);
	free(l);
}

const struct ks_cfi_stats *ks_cfi_loader_stats(const struct ks_cfi_loader *l)
{
	return &l->st;
}

/* A new module of file (@dev, @ino); NULL on no memory.  It has no table until one is loaded (load_table). */
static struct cfi_mod *new_module(struct ks_cfi_loader *l, uint64_t dev, uint64_t ino)
{
	struct cfi_mod *m;

	if (l->nmods == l->capmods) {
		size_t nc = l->capmods ? l->capmods * 2 : 64;
		struct cfi_mod *nm = realloc(l->mods, nc * sizeof(*nm));

		if (!nm)
			return NULL;
		l->mods = nm;
		l->capmods = nc;
	}
	m = &l->mods[l->nmods++];
	memset(m, 0, sizeof(*m));
	m->dev = dev;
	m->ino = ino;
	m->none = true;
	l->st.modules++;
	return m;
}

/*
 * Compiles the ELF file at @fd (or reads its table from the cache, @cache)
 * into @m's table in cfi_rows, or marks it fp where it does not fit.
 */
static void load_table(struct ks_cfi_loader *l, struct cfi_mod *m, int fd, bool cache)
{
	struct ks_cfi_table t;
	int got = ks_cfi_table_fd(fd, cache, &t, &m->ld);

	if (got < 0) {
		l->st.modules_none++;
		return;
	}
	l->st.modules_cached += got;
	m->none = false;
	if (t.n > l->cap - l->used) {
		/* no room: frame pointers in this module, said in -v and JSON */
		m->fp = true;
		l->st.modules_fp++;
		l->st.rows_dropped += t.n;
	} else {
		memcpy(l->rows + l->used, t.rows, t.n * sizeof(*t.rows));
		m->row = l->used;
		m->nrows = (uint32_t)t.n;
		l->used += (uint32_t)t.n;
		l->st.rows = l->used;
	}
	ks_cfi_table_free(&t);
}

/* -v: how a module's frames are walked, said once at its first sight: by its tables, or by frame pointers and why. */
static void say_module(const struct cfi_mod *m, const char *path)
{
	if (!ks_verbose)
		return;
	if (m->none)
		p_info("cfi: %s: no .eh_frame/.debug_frame tables (or unreadable): frame pointers", KS_ESC(path));
	else if (m->fp)
		p_info("cfi: %s: its tables did not fit (raise --max-memory): frame pointers", KS_ESC(path));
	else
		p_info("cfi: %s: tables, %u rows", KS_ESC(path), m->nrows);
}

static struct cfi_mod *find_module(struct ks_cfi_loader *l, uint64_t dev, uint64_t ino)
{
	for (size_t i = 0; i < l->nmods; i++)
		if (l->mods[i].dev == dev && l->mods[i].ino == ino)
			return &l->mods[i];
	return NULL;
}

/* The module of file (@dev, @ino), compiled (from @path under @pid's root) and loaded at its first sight. */
static struct cfi_mod *module(struct ks_cfi_loader *l, uint32_t pid, uint64_t dev, uint64_t ino, const char *path)
{
	struct cfi_mod *m = find_module(l, dev, ino);
	struct stat sb;
	char p[4096 + 64];
	int fd;

	if (m)
		return m;
	m = new_module(l, dev, ino);
	if (!m)
		return NULL;
	/* through the process's root: a container's files are its own */
	snprintf(p, sizeof(p), "/proc/%u/root%s", pid, path);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && !fstat(fd, &sb) && sb.st_ino == ino)
		load_table(l, m, fd, true);
	else
		l->st.modules_none++;
	if (fd >= 0)
		close(fd);
	say_module(m, path);
	return m;
}

/*
 * The vDSO's module.  Every 64-bit process of this kernel maps the same
 * image, so it is compiled from this process's own copy (its .eh_frame
 * covers each entry point), written to a memfd for libelf.  Not cached:
 * its table is a few dozen rows, compiled in less time than a cache
 * entry takes to open and check.
 */
#define VDSO_DEV UINT64_MAX
static struct cfi_mod *vdso_module(struct ks_cfi_loader *l)
{
	struct cfi_mod *m = find_module(l, VDSO_DEV, 0);
	unsigned long long start, end;
	char line[512];
	FILE *f;
	int fd;

	if (m)
		return m;
	m = new_module(l, VDSO_DEV, 0);
	if (!m)
		return NULL;
	f = fopen("/proc/self/maps", "re");
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "[vdso]") && sscanf(line, "%llx-%llx", &start, &end) == 2)
			break;
	if (!f || feof(f) || (fd = memfd_create("ksight-vdso", MFD_CLOEXEC)) < 0) {
		l->st.modules_none++;
	} else {
		if (write(fd, (const void *)(uintptr_t)start, end - start) == (ssize_t)(end - start))
			load_table(l, m, fd, false);
		else
			l->st.modules_none++;
		close(fd);
	}
	if (f)
		fclose(f);
	say_module(m, "[vdso]");
	return m;
}

static int cmp_map(const void *a, const void *b)
{
	const struct ks_cfi_map *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

int ks_cfi_load_pid(struct ks_cfi_loader *l, uint32_t pid)
{
	struct ks_cfi_proc *pr;
	struct timespec t0, t1;
	char path[64], line[4096 + 256];
	FILE *f;
	int err = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	pr = calloc(1, sizeof(*pr));
	if (!pr)
		return -ENOMEM;
	/*
	 * When the program last asked for its maps again, in its clock's unit
	 * (bpf_ktime_get_ns >> 20): kept from the entry this one replaces, so
	 * that a process whose pcs no mapping holds (JIT) is read at most
	 * once a second; a second ago for a new one, so that its first walk into a library loaded
	 * since asks at once.
	 */
	if (bpf_map_lookup_elem(l->procs_fd, &pid, pr))
		pr->asked = (uint32_t)((((uint64_t)t0.tv_sec * 1000000000ull + (uint64_t)t0.tv_nsec) >> 20) - 1000);
	pr->n = 0;
	memset(pr->m, 0, sizeof(pr->m));
	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	f = fopen(path, "re");
	if (!f) {
		err = -errno;
		l->st.procs_lost++;
		/* one mapping over the whole address space with no table: its walks take frame pointers,
		 * as fp mode would, instead of announcing it again at each sample */
		pr->n = 1;
		pr->m[0].end = UINT64_MAX;
		bpf_map_update_elem(l->procs_fd, &pid, pr, BPF_ANY);
		free(pr);
		return err;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, off, ino;
		unsigned int maj, min;
		char perms[8], file[4096];
		struct cfi_mod *m;
		struct ks_cfi_map *e;
		int i;

		file[0] = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %4095[^\n]", &start, &end, perms, &off, &maj, &min, &ino,
			   file) < 7 || perms[2] != 'x')
			continue;
		if (!strcmp(file, "[vdso]"))
			m = vdso_module(l);
		else if (!ino || file[0] != '/')
			continue;
		else /* " (deleted)": the file is gone from its path; its mapping is unwound as no mapping */
			m = module(l, pid, ((uint64_t)maj << 32) | min, ino, file);
		if (!m) {
			err = -ENOMEM;
			break;
		}
		if (m->none)
			continue;
		if (pr->n == KS_CFI_MAPS) {
			l->st.maps_lost++;
			continue;
		}
		/* the segment that holds the mapping's file offset gives the bias: ELF address = pc - bias */
		for (i = 0; i < m->ld.n; i++)
			if (off >= (m->ld.seg[i].off & ~4095ull) && off < m->ld.seg[i].off + m->ld.seg[i].filesz)
				break;
		if (i == m->ld.n)
			continue;
		e = &pr->m[pr->n++];
		e->start = start;
		e->end = end;
		e->bias = start - off + m->ld.seg[i].off - m->ld.seg[i].vaddr;
		e->row = m->row;
		e->nrows = m->fp ? 0 : m->nrows;
	}
	fclose(f);
	if (!err) {
		qsort(pr->m, pr->n, sizeof(pr->m[0]), cmp_map);
		if (bpf_map_update_elem(l->procs_fd, &pid, pr, BPF_ANY)) {
			err = -errno;
			l->st.procs_lost++;
		} else {
			l->st.procs++;
		}
	}
	free(pr);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	l->st.compile_ns += (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000000ll + (t1.tv_nsec - t0.tv_nsec));
	return err;
}
