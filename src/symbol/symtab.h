/* A module's symbols sorted by address: libdwfl's address-to-symbol answer in O(log n) instead of its walk of the whole table per address. */
#ifndef KS_SYMBOL_SYMTAB_H
#define KS_SYMBOL_SYMTAB_H

#include <stddef.h>
#include <stdint.h>
#include <elfutils/libdwfl.h>

struct ks_symtab_ent {
	uint64_t start, end; /* [start, end) in the module's addresses; end == start for a label */
	const char *name;    /* in the module's string table: lives as long as its Dwfl */
	unsigned rank;	/* binding, higher preferred: global 3, weak 2, local 1, others 0 */
	unsigned local; /* 1: in libdwfl's second search (the locals), 0: its first */
	unsigned idx;	/* index in the table: the order libdwfl's walk meets symbols in */
	unsigned abs;	/* a label in no section (SHN_ABS...): it names its own address only */
	size_t sec;	/* labels: their section, as libdwfl finds it from their address */
};

/* An allocated section of the module's file, [start, end] in its addresses. */
struct ks_symtab_sec {
	uint64_t start, end;
	size_t ndx;
};

struct ks_symtab {
	struct ks_symtab_ent *sized; /* by start, then search order */
	size_t nsized;
	uint64_t *max_end; /* max_end[i]: the largest end of sized[0..i] */
	struct ks_symtab_ent *labels; /* sizeless symbols, by start, then search order */
	size_t nlabels;
	struct ks_symtab_sec *secs; /* by start */
	size_t nsecs;
};

/* Reads @m's symbol table (the one dwfl_module_addrinfo searches) into @t: 0 or -ENOMEM. */
int ks_symtab_build(struct ks_symtab *t, Dwfl_Module *m);
/*
 * The symbol dwfl_module_addrinfo(@m, @a, ...) names (@m: an executable or
 * shared object, as a process maps them), from @t: a sized symbol holding
 * @a, else the closest label below @a that no sized symbol's extent
 * passes; NULL: none, with *@off 0, or UINT64_MAX when more symbols hold
 * @a than this follows (never seen: ask libdwfl).  *@off: @a's offset in it.
 */
const struct ks_symtab_ent *ks_symtab_find(const struct ks_symtab *t, uint64_t a, uint64_t *off);
void ks_symtab_free(struct ks_symtab *t);

#endif
