/* --call-graph cfi's user side: compiles ELF CFI into the unwind tables bpf/profile.bpf.c walks, and loads them per process. */
#ifndef KS_PROFILE_CFI_H
#define KS_PROFILE_CFI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ksight/profile.h"
#include "output/profile.h"

/*
 * A module's unwind table: rows sorted by pc, each holding to the next
 * one's pc; neighbours with the same rule are merged.  The last row is
 * KS_CFI_NONE (past the last FDE).
 */
struct ks_cfi_table {
	struct ks_cfi_row *rows;
	size_t n;
	uint64_t fdes;	  /* FDEs read */
	uint64_t unsup;	  /* rows (before merging) with a rule the walker cannot evaluate */
	uint64_t plt;	  /* rows of the PLT's CFA expression, evaluated specially */
	bool debug_frame; /* from .debug_frame (no .eh_frame_hdr to list the FDEs) */
};

/*
 * Compiles the CFI of the ELF file open at @fd: .eh_frame through its
 * .eh_frame_hdr search table, or .debug_frame where the file has no
 * .eh_frame_hdr.  x86-64 only.  0, or -ENOEXEC (not an x86-64 ELF),
 * -ENODATA (no CFI), -ENOMEM.
 */
int ks_cfi_compile_fd(int fd, struct ks_cfi_table *t);
int ks_cfi_compile(const char *path, struct ks_cfi_table *t);
void ks_cfi_table_free(struct ks_cfi_table *t);
/* The row holding @pc (binary search, as the BPF walker does), or NULL. */
const struct ks_cfi_row *ks_cfi_lookup(const struct ks_cfi_table *t, uint64_t pc);

/* A file's loadable segments (PT_LOAD, the first KS_CFI_LOADS), for the bias of a mapping of it. */
#define KS_CFI_LOADS 8
struct ks_cfi_loads {
	int n;
	struct {
		uint64_t off, vaddr, filesz;
	} seg[KS_CFI_LOADS];
};

/*
 * The table and loadable segments of the ELF file open at @fd: read from
 * the cache of compiled tables (HEX.cfi by GNU build-id, in
 * ks_debugcache_dir()) when it holds a valid entry for the file, else
 * compiled as ks_cfi_compile_fd does and, @use_cache, written there for
 * the next runs.  1: from the cache; 0: compiled; negative errno as
 * ks_cfi_compile_fd (-ENOEXEC also for unreadable program headers).
 * Files without a build-id are compiled every time.
 */
int ks_cfi_table_fd(int fd, bool use_cache, struct ks_cfi_table *t, struct ks_cfi_loads *ld);

/* Loads tables into the profile program's maps as processes are announced. */
struct ks_cfi_loader;

/*
 * @rows: the mmap of the cfi_rows array (@cap rows); @procs_fd: cfi_procs.
 * NULL and errno on failure.
 */
struct ks_cfi_loader *ks_cfi_loader_new(struct ks_cfi_row *rows, uint32_t cap, int procs_fd);
void ks_cfi_loader_free(struct ks_cfi_loader *l);
/* Reads /proc/@pid/maps and loads its mappings' tables (compiled once per file); 0 or negative errno. */
int ks_cfi_load_pid(struct ks_cfi_loader *l, uint32_t pid);
const struct ks_cfi_stats *ks_cfi_loader_stats(const struct ks_cfi_loader *l);

#endif
