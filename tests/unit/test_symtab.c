/* Unit tests of the sorted symbol table (src/symbol/symtab.c): the same name as dwfl_module_addrinfo at every symbol's edges and across the text of real files. */
#include <elfutils/libdwfl.h>
#include "symbol/symtab.h"
#include "test.h"

static const Dwfl_Callbacks offline_cbs = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

struct cmp_stats {
	size_t checked, asked, named, mismatched;
};

/* The table's answer at @a (libdwfl's own walk where the table defers to it, as usym.c does), against libdwfl's. */
static void check_addr(Dwfl_Module *m, const struct ks_symtab *t, uint64_t a, struct cmp_stats *st)
{
	GElf_Off off;
	GElf_Sym sym;
	uint64_t toff;
	const struct ks_symtab_ent *e = ks_symtab_find(t, a, &toff);
	const char *want = dwfl_module_addrinfo(m, a, &off, &sym, NULL, NULL, NULL), *got = e ? e->name : NULL;

	if (!e && toff == UINT64_MAX) {
		st->asked++;
		got = want; /* the caller asks libdwfl */
	}
	if (want && !*want)
		want = NULL;
	st->checked++;
	if (want)
		st->named++;
	if ((want == NULL) != (got == NULL) || (want && strcmp(want, got)) || (e && off != toff)) {
		if (st->mismatched++ < 5)
			fprintf(stderr, "  %#" PRIx64 ": libdwfl %s+%#" PRIx64 ", table %s+%#" PRIx64 "\n", a,
				want ? want : "(none)", (uint64_t)off, got ? got : "(none)", toff);
	}
}

/*
 * Every sized symbol's first, last and one-past-last byte, and @every-th
 * address across the module; 0 when none differ.
 */
static int compare_module(const char *path, uint64_t every, struct cmp_stats *st)
{
	Dwfl *d = dwfl_begin(&offline_cbs);
	Dwfl_Module *m;
	Dwarf_Addr lo, hi;
	struct ks_symtab t;

	memset(st, 0, sizeof(*st));
	if (!d)
		return -1;
	dwfl_report_begin(d);
	m = dwfl_report_offline(d, path, path, -1);
	dwfl_report_end(d, NULL, NULL);
	if (!m || ks_symtab_build(&t, m)) {
		dwfl_end(d);
		return -1;
	}
	dwfl_module_info(m, NULL, &lo, &hi, NULL, NULL, NULL, NULL);
	for (size_t i = 0; i < t.nsized; i++) {
		check_addr(m, &t, t.sized[i].start, st);
		check_addr(m, &t, t.sized[i].end - 1, st);
		check_addr(m, &t, t.sized[i].end, st);
	}
	for (size_t i = 0; i < t.nlabels; i++)
		check_addr(m, &t, t.labels[i].start, st);
	for (uint64_t a = lo; a < hi; a += every)
		check_addr(m, &t, a, st);
	fprintf(stderr, "  %s: %zu sized, %zu labels; %zu addresses, %zu named, %zu asked of libdwfl, %zu differ\n",
		path, t.nsized, t.nlabels, st->checked, st->named, st->asked, st->mismatched);
	ks_symtab_free(&t);
	dwfl_end(d);
	return 0;
}

/* Symbols of this binary the table must name: aliases, a local, a nested label. */
__attribute__((noinline, used)) int symtab_target(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * 3;
}
int symtab_target_alias(int x) __attribute__((alias("symtab_target")));
__attribute__((noinline, used)) static int symtab_local(int x)
{
	__asm__ volatile("" ::: "memory");
	return x - 1;
}

TEST(same_names_as_libdwfl_in_this_binary)
{
	struct cmp_stats st;

	ASSERT_EQ_INT(compare_module("/proc/self/exe", 7, &st), 0);
	EXPECT_TRUE(st.named > 1000);
	EXPECT_EQ_U64(st.mismatched, 0);
	/* the table answers every address itself, labels too */
	EXPECT_EQ_U64(st.asked, 0);
	(void)symtab_local(1);
}

TEST(same_names_as_libdwfl_in_system_files)
{
	/* libc (with its debug file's full table where libc6-dbg is installed), a stripped program */
	const char *paths[] = { "/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libz.so.1",
				"/usr/lib/x86_64-linux-gnu/libdw.so.1", "/bin/ls" };
	int done = 0;

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		struct cmp_stats st;

		if (access(paths[i], R_OK) || compare_module(paths[i], 509, &st))
			continue;
		done++;
		EXPECT_TRUE(st.checked > 300);
		EXPECT_EQ_U64(st.mismatched, 0);
		EXPECT_EQ_U64(st.asked, 0);
	}
	EXPECT_TRUE(done > 0);
}

TEST(aliases_take_the_strongest_binding)
{
	Dwfl *d = dwfl_begin(&offline_cbs);
	Dwfl_Module *m;
	struct ks_symtab t;
	uint64_t off;
	const struct ks_symtab_ent *e;
	GElf_Off doff;
	GElf_Sym sym;
	const char *want;
	size_t i;

	ASSERT_TRUE(d != NULL);
	dwfl_report_begin(d);
	m = dwfl_report_offline(d, "self", "/proc/self/exe", -1);
	dwfl_report_end(d, NULL, NULL);
	ASSERT_TRUE(m != NULL);
	ASSERT_EQ_INT(ks_symtab_build(&t, m), 0);
	for (i = 0; i < t.nsized && strcmp(t.sized[i].name, "symtab_target_alias"); i++)
		;
	ASSERT_TRUE(i < t.nsized);
	e = ks_symtab_find(&t, t.sized[i].start + 1, &off);
	want = dwfl_module_addrinfo(m, t.sized[i].start + 1, &doff, &sym, NULL, NULL, NULL);
	ASSERT_TRUE(e != NULL && want != NULL);
	EXPECT_EQ_STR(e->name, want);
	EXPECT_EQ_U64(off, 1);
	ks_symtab_free(&t);
	dwfl_end(d);
}
