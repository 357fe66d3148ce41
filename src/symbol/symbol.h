/* Symbolization and unwinding: kernel addresses from /proc/kallsyms, user addresses and DWARF unwinding with elfutils libdwfl. */
#ifndef KS_SYMBOL_SYMBOL_H
#define KS_SYMBOL_SYMBOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * In an array of @n entries of @stride bytes sorted by a leading uint64_t
 * address, the count of entries at or below @addr: the entry containing
 * @addr, if any, is the one before that index.
 */
size_t ks_sym_upper(const void *base, size_t n, size_t stride, uint64_t addr);

/* The kernel's text symbols, sorted by address. */
struct ks_ksyms;

/*
 * Reads @path (NULL: /proc/kallsyms).  NULL with errno set on failure.
 * When kptr_restrict hides the addresses (all read as 0), the table loads
 * empty and ks_ksyms_hidden says so.
 */
struct ks_ksyms *ks_ksyms_load(const char *path);
bool ks_ksyms_hidden(const struct ks_ksyms *k);
/* The symbol containing @addr ("func" or "func [module]"), or NULL. */
const char *ks_ksyms_name(const struct ks_ksyms *k, uint64_t addr);
void ks_ksyms_free(struct ks_ksyms *k);
/* The address range of the kernel's text symbols [*@start, *@end) (0, 0: none), for a profile's kernel mapping. */
void ks_ksyms_range(const struct ks_ksyms *k, uint64_t *start, uint64_t *end);
/* The running kernel's GNU build-id from /sys/kernel/notes into @id (up to @len bytes): its length, or 0. */
int ks_kernel_build_id(unsigned char *id, int len);

/* What kind of code a user frame is in. */
enum ks_ufr_kind {
	KS_UFR_USER = 0,
	KS_UFR_JIT = 1, /* from /tmp/perf-PID.map */
};

/* User-space symbolization of many processes: their mappings, ELF files and debug info. */
struct ks_usyms;

/*
 * @unwind: ks_usyms_unwind will be asked (a libdwfl Dwfl per process, its
 * ELF files opened at its capture); else a capture reads only the process's
 * mappings, and the files are read once, at the first address in them.
 */
struct ks_usyms *ks_usyms_new(bool unwind);
void ks_usyms_free(struct ks_usyms *u);
/*
 * Captures @pid's mappings and opens its ELF files now, through
 * /proc/PID/root (so a container's own files are read), so that the
 * process still symbolizes after it exits.  0 or negative errno (-ESRCH:
 * gone already).  Again for a process captured: nothing with @unwind;
 * else its maps are read again (it exec'd), the mappings they no longer
 * show kept for its earlier samples.
 */
int ks_usyms_capture(struct ks_usyms *u, uint32_t pid);
/*
 * Something new is mapped in @pid (a library it loaded since: the CFI
 * walker met a pc in no mapping): without @unwind, its maps are read
 * again now, while it lives, the mappings they no longer show kept.
 */
int ks_usyms_mapped(struct ks_usyms *u, uint32_t pid);
/* Reads again the maps of the processes announced again (exec'd) since the last call: a drain later, their new program is mapped. */
void ks_usyms_refresh(struct ks_usyms *u);
/*
 * Names @pc of @pid into @buf: "function", or "[unknown] (module)" /
 * "[unknown]".  @ret: @pc is a return address (looked up at pc - 1, the
 * call).  Returns the frame kind.
 */
enum ks_ufr_kind ks_usyms_name(struct ks_usyms *u, uint32_t pid, uint64_t pc, bool ret, char *buf,
			       size_t len);
/* At most this many inlined calls are told per frame (the innermost are left out past it). */
#define KS_UINLINE_MAX 8
/* A name as ks_usyms_inlines gives it. */
typedef char ks_uinline_name[128];
/*
 * The calls inlined at @pc (a return address when @ret) of process @pid,
 * as the module's DWARF tells them: the function the code at @pc belongs
 * to inlined some, which inlined others...: their names outermost first
 * into @names.  Returns how many (0 without DWARF, or where nothing is
 * inlined); the physical function itself is ks_usyms_name's.  Answers are
 * kept per process and address: the hot addresses of a profile repeat.
 */
int ks_usyms_inlines(struct ks_usyms *u, uint32_t pid, uint64_t pc, bool ret, ks_uinline_name *names, int max);
/* Where a user address is, for a profile other tools symbolize (pprof): its mapping and source lines. */
struct ks_uwhere {
	uint64_t start, limit, offset; /* the mapping holding it, as the process's maps gave it */
	const char *file;	       /* the mapped file's path there; NULL: in no file (JIT code, not captured) */
	unsigned char build_id[64];    /* the file's GNU build-id (build_id_len bytes; 0: none) */
	int build_id_len;
	/*
	 * Source lines from the module's DWARF, innermost first: the line of the
	 * address, then, for each call inlined there (ks_usyms_inlines' order
	 * reversed), its call site in the function around it.  0: no DWARF
	 * there.  file strings live as long as the ks_usyms; a relative one is
	 * under comp_dir (the compile directory; NULL: none given).
	 */
	const char *comp_dir;
	int nlines;
	struct {
		const char *file;
		int line;
	} lines[KS_UINLINE_MAX + 1];
};
/* Fills @w for @pc (a return address when @ret) of process @pid; 0, or -ENOENT where no mapping is known. */
int ks_usyms_where(struct ks_usyms *u, uint32_t pid, uint64_t pc, bool ret, struct ks_uwhere *w);
/*
 * Unwinds a copied user stack with DWARF CFI (.eh_frame, .debug_frame):
 * @regs are the x86-64 DWARF registers 0..16, @stack the @len bytes from
 * regs[7] (sp).  Writes up to @max program counters, innermost first, to
 * @pcs; @is_ret[i] tells whether pcs[i] is a return address.  Returns the
 * count (at least 1 when regs[16] is set) or negative errno.
 */
int ks_usyms_unwind(struct ks_usyms *u, uint32_t pid, uint32_t tid, const uint64_t *regs,
		    const uint8_t *stack, uint32_t len, uint64_t *pcs, bool *is_ret, int max);

#endif
