/* Probe targets in ELF files: a binary or library name resolved to a path, its functions and USDT probes matched by glob. */
#ifndef KS_SYMBOL_ELFSYM_H
#define KS_SYMBOL_ELFSYM_H

#include <stddef.h>
#include <stdint.h>

/*
 * The file @bin names, into @out: a path as given; with @pid a file mapped
 * by that process whose name is @bin or starts with it followed by '.' or
 * '-' ("libc" finds libc.so.6), reached through /proc/PID/root so that a
 * container's own files are probed; otherwise a library from
 * LD_LIBRARY_PATH, /etc/ld.so.conf and the default directories (as the
 * dynamic linker searches), or a program from PATH.  0, -ENOENT when no
 * such file exists, -ENAMETOOLONG.
 */
int ks_elf_resolve(const char *bin, uint32_t pid, char *out, size_t len);

struct ks_elf_func {
	char *name;
	uint64_t offset; /* file offset, as uprobes take it */
};

/*
 * The defined functions of @path (.symtab and .dynsym) whose name matches
 * the glob @pat, sorted by name.  Aliases at one address are one function
 * (the name with the fewest leading underscores, then the shortest);
 * indirect functions (IFUNC resolvers) are left out and counted in
 * *@nifunc.  0 (maybe with none found), or negative errno (-ENOEXEC: not
 * an ELF file).
 */
int ks_elf_funcs(const char *path, const char *pat, struct ks_elf_func **out, size_t *n, size_t *nifunc);
void ks_elf_funcs_free(struct ks_elf_func *f, size_t n);

struct ks_elf_usdt {
	char *provider, *name;
};

/*
 * The USDT probes (.note.stapsdt) of @path whose provider and name match
 * the globs @prov and @name, each distinct pair once, sorted.  0 or
 * negative errno.
 */
int ks_elf_usdts(const char *path, const char *prov, const char *name, struct ks_elf_usdt **out, size_t *n);
void ks_elf_usdts_free(struct ks_elf_usdt *u, size_t n);

#endif
