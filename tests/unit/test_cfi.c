/* Unit tests of --call-graph cfi's table compiler (src/profile/cfi.c): its rows against readelf's own reading of the same CFI. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/ucontext.h>
#include <unistd.h>
#include "profile/cfi.h"
#include "test.h"

/*
 * Every row `readelf --debug-dump=frames-interp FILE` prints for .eh_frame
 * (binutils' decoder, not libdw's): the compiled table must give the same
 * CFA rule and rbp rule at that address.  The number of rows checked goes
 * to @checked; -1 when readelf is missing.
 */
static int check_against_readelf(const char *file, const char *sec, const struct ks_cfi_table *t, int *checked, int *plt)
{
	char want_sec[64];
	bool in_sec = false;

	char cmd[512], line[1024], cols[16][32];
	int ncols = 0, bad = 0, in_fde = 0;
	FILE *p;

	*checked = *plt = 0;
	snprintf(cmd, sizeof(cmd), "readelf --debug-dump=frames-interp '%s' 2>/dev/null", file);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p)) {
		char tok[16][32];
		int n = 0, ci;
		const char *s = line;
		unsigned long long loc;
		const struct ks_cfi_row *r;
		int want_kind = -1, want_cfa = 0, want_rbp = 0;

		/* the section the table was compiled from */
		if (strstr(line, "Contents of the ")) {
			snprintf(want_sec, sizeof(want_sec), "Contents of the %s section", sec);
			in_sec = strstr(line, want_sec) != NULL;
			continue;
		}
		if (!in_sec)
			continue;
		/* a CIE's rows are its initial state, at address 0: only an FDE's are addresses */
		if (strstr(line, " CIE ") || strstr(line, " FDE ")) {
			in_fde = strstr(line, " FDE ") != NULL;
			continue;
		}
		while (n < 16 && sscanf(s, "%31s%n", tok[n], &ci) == 1) {
			s += ci;
			n++;
		}
		if (n >= 2 && !strcmp(tok[0], "LOC") && !strcmp(tok[1], "CFA")) {
			ncols = n;
			for (int i = 0; i < n; i++)
				memcpy(cols[i], tok[i], sizeof(cols[i]));
			continue;
		}
		if (!in_fde || n < 2 || n != ncols || strlen(tok[0]) != 16 || sscanf(tok[0], "%llx", &loc) != 1)
			continue;
		if (!strncmp(tok[1], "rsp+", 4) || !strncmp(tok[1], "rbp+", 4)) {
			want_kind = tok[1][1] == 's' ? KS_CFI_RSP : KS_CFI_RBP;
			want_cfa = atoi(tok[1] + 4);
			/* past the row's 16 bits (libc's printf family: rsp+33360): unsupported, and counted */
			if (want_cfa > INT16_MAX)
				want_kind = KS_CFI_UNSUP;
		} else if (!strcmp(tok[1], "exp")) {
			want_kind = -2; /* PLT, or unsupported */
		} else {
			want_kind = KS_CFI_UNSUP;
		}
		for (int i = 2; i < n; i++) {
			if (!strcmp(cols[i], "ra") && !strcmp(tok[i], "u"))
				want_kind = KS_CFI_END;
			if (!strcmp(cols[i], "rbp") && !strncmp(tok[i], "c-", 2))
				want_rbp = -atoi(tok[i] + 2);
		}
		r = ks_cfi_lookup(t, loc);
		(*checked)++;
		if (!r) {
			if (++bad <= 5)
				fprintf(stderr, "  %s at %#llx: no row\n", file, loc);
			continue;
		}
		if (want_kind == -2) {
			if (r->kind == KS_CFI_PLT)
				(*plt)++;
			else if (r->kind != KS_CFI_UNSUP && r->kind != KS_CFI_SIGNAL && ++bad <= 5)
				fprintf(stderr, "  %s at %#llx: readelf exp, table kind %u\n", file, loc, r->kind);
			continue;
		}
		if (r->kind != want_kind ||
		    (want_kind <= KS_CFI_RBP && (r->cfa_off != want_cfa || r->rbp_off * 8 != want_rbp))) {
			if (bad < 5)
				fprintf(stderr, "  %s at %#llx: readelf %s rbp %d, table kind %u cfa %+d rbp %+d\n", file, loc,
					tok[1], want_rbp, r->kind, r->cfa_off, r->rbp_off * 8);
			bad++;
		}
	}
	if (pclose(p) != 0 && !*checked)
		return -1;
	fprintf(stderr, "  %s: %d of readelf's rows compared, %d differ, %d PLT rows (%zu rows in the table)\n", file,
		*checked, bad, *plt, t->n);
	return bad;
}

TEST(rows_match_readelf_on_this_binary)
{
	struct ks_cfi_table t;
	int checked, plt, bad;
	char self[64];

	/* by pid: readelf's own /proc/self is readelf */
	snprintf(self, sizeof(self), "/proc/%d/exe", (int)getpid());
	ASSERT_EQ_INT(ks_cfi_compile(self, &t), 0);
	EXPECT_TRUE(t.n > 10);
	EXPECT_TRUE(t.fdes > 10);
	/* sorted, strictly */
	for (size_t i = 1; i < t.n; i++)
		if (t.rows[i].pc <= t.rows[i - 1].pc)
			ASSERT_TRUE(!"rows out of order");
	/* past the last FDE: nothing */
	EXPECT_EQ_INT(t.rows[t.n - 1].kind, KS_CFI_NONE);
	bad = check_against_readelf(self, ".eh_frame", &t, &checked, &plt);
	if (bad < 0) {
		fprintf(stderr, "  (readelf not installed: the comparison is skipped)\n");
	} else {
		EXPECT_EQ_INT(bad, 0);
		EXPECT_TRUE(checked > 50);
	}
	ks_cfi_table_free(&t);
}

/* The shared libc: thousands of FDEs, the PLT's expression evaluated, few rules left unsupported. */
TEST(rows_match_readelf_on_libc)
{
	const char *libc = "/lib/x86_64-linux-gnu/libc.so.6";
	struct ks_cfi_table t;
	int checked, plt, bad;

	if (ks_cfi_compile(libc, &t) == -ENOENT) {
		fprintf(stderr, "  (no %s: skipped)\n", libc);
		return;
	}
	ASSERT_TRUE(t.n > 1000);
	EXPECT_TRUE(t.plt >= 1);
	/* expressions other than the PLT's are rare in libc (a few hand-written assembly functions) */
	EXPECT_TRUE(t.unsup * 100 < t.n);
	bad = check_against_readelf(libc, ".eh_frame", &t, &checked, &plt);
	if (bad >= 0) {
		EXPECT_EQ_INT(bad, 0);
		EXPECT_TRUE(checked > 10000);
		EXPECT_TRUE(plt >= 1);
	}
	ks_cfi_table_free(&t);
}

/*
 * The signal frame: libc's restorer (__restore_rt, in no .dynsym) is found
 * by its FDE, the one whose CIE has the 'S' augmentation (readelf's own
 * reading); its row is KS_CFI_SIGNAL with the ucontext's offsets of rsp
 * and rbp (rip follows rsp), from the restorer's rsp, which is the
 * ucontext's start.
 */
TEST(signal_frame_row_in_libc)
{
	const char *libc = "/lib/x86_64-linux-gnu/libc.so.6";
	char cmd[256], line[512], scie[16][16];
	int nscie = 0, fdes = 0, nsig = 0;
	struct ks_cfi_table t;
	FILE *p;

	if (ks_cfi_compile(libc, &t) == -ENOENT) {
		fprintf(stderr, "  (no %s: skipped)\n", libc);
		return;
	}
	for (size_t i = 0; i < t.n; i++)
		nsig += t.rows[i].kind == KS_CFI_SIGNAL;
	snprintf(cmd, sizeof(cmd), "readelf --debug-dump=frames '%s' 2>/dev/null", libc);
	p = popen(cmd, "r");
	ASSERT_TRUE(p != NULL);
	while (fgets(line, sizeof(line), p)) {
		char off[16], cie[16];
		unsigned long long lo, hi;
		const struct ks_cfi_row *r;
		bool in_s = false;

		/* "OFFSET LEN 00000000 CIE", then its "Augmentation: "zRS"" line */
		if (sscanf(line, "%15s %*s %*s CIE", off) == 1 && strstr(line, " CIE") && nscie < 16) {
			memcpy(scie[nscie], off, sizeof(off));
			continue;
		}
		if (strstr(line, "Augmentation:") && strchr(line, '"') && strchr(strchr(line, '"'), 'S') &&
		    nscie < 16) {
			nscie++;
			continue;
		}
		if (!strstr(line, " FDE cie=") || sscanf(strstr(line, "cie="), "cie=%15s pc=%llx..%llx", cie, &lo, &hi) != 3)
			continue;
		for (int i = 0; i < nscie; i++)
			in_s |= !strcmp(cie, scie[i]);
		if (!in_s)
			continue;
		fdes++;
		/* the walker looks the handler's return address (the restorer, the FDE's start + 1) up less 1 */
		r = ks_cfi_lookup(&t, lo);
		ASSERT_TRUE(r != NULL);
		fprintf(stderr, "  'S' FDE %#llx..%#llx: kind %u, rsp at +%d, rbp at +%d\n", lo, hi, r->kind, r->cfa_off,
			r->rbp_off * 8);
		EXPECT_EQ_INT(r->kind, KS_CFI_SIGNAL);
		EXPECT_EQ_INT(r->cfa_off, (int)offsetof(ucontext_t, uc_mcontext.gregs[REG_RSP]));
		EXPECT_EQ_INT(r->rbp_off * 8, (int)offsetof(ucontext_t, uc_mcontext.gregs[REG_RBP]));
		EXPECT_EQ_INT((int)offsetof(ucontext_t, uc_mcontext.gregs[REG_RIP]), r->cfa_off + 8);
		EXPECT_TRUE(ks_cfi_lookup(&t, hi - 1) == r);
	}
	pclose(p);
	if (fdes) {
		/* glibc has one restorer: one FDE, one row */
		EXPECT_EQ_INT(fdes, 1);
		EXPECT_EQ_INT(nsig, fdes);
	} else {
		fprintf(stderr, "  (no readelf, or no 'S' FDE in %s: %d signal rows)\n", libc, nsig);
	}
	ks_cfi_table_free(&t);
}

/* At every function's first instruction the return address was just pushed: CFA = rsp + 8. */
__attribute__((noinline, used)) int cfi_target(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * 3;
}

TEST(function_entry_is_rsp_plus_8)
{
	struct ks_cfi_table t;
	const struct ks_cfi_row *r;
	char cmd[256], line[256];
	unsigned long long addr = 0;
	FILE *p;

	ASSERT_EQ_INT(ks_cfi_compile("/proc/self/exe", &t), 0);
	/* the ELF address of cfi_target (nm: the file's own, not this process's load address) */
	snprintf(cmd, sizeof(cmd), "nm /proc/%d/exe 2>/dev/null", (int)getpid());
	p = popen(cmd, "r");
	while (p && fgets(line, sizeof(line), p))
		if (strstr(line, " cfi_target\n"))
			addr = strtoull(line, NULL, 16);
	if (p)
		pclose(p);
	if (!addr) {
		fprintf(stderr, "  (nm not installed: skipped)\n");
		ks_cfi_table_free(&t);
		return;
	}
	r = ks_cfi_lookup(&t, addr);
	ASSERT_TRUE(r != NULL);
	EXPECT_EQ_INT(r->kind, KS_CFI_RSP);
	EXPECT_EQ_INT(r->cfa_off, 8);
	EXPECT_EQ_INT(r->rbp_off, 0);
	ks_cfi_table_free(&t);
}

TEST(not_elf_and_missing_files)
{
	struct ks_cfi_table t;

	EXPECT_EQ_INT(ks_cfi_compile("/etc/hostname", &t), -ENOEXEC);
	EXPECT_EQ_INT(ks_cfi_compile("/nonexistent", &t), -ENOENT);
}



/*
 * .debug_frame where the file has no .eh_frame_hdr: a program built with
 * -fno-asynchronous-unwind-tables -g (its functions' CFI only in
 * .debug_frame) and linked without the header.  Needs cc and readelf.
 */
TEST(debug_frame_when_no_eh_frame_hdr)
{
	char dir[] = "/tmp/ks-cfi-XXXXXX", src[64], bin[64], cmd[512];
	struct ks_cfi_table t;
	int checked, plt, bad;
	FILE *f;

	ASSERT_TRUE(mkdtemp(dir) != NULL);
	snprintf(src, sizeof(src), "%s/p.c", dir);
	snprintf(bin, sizeof(bin), "%s/p", dir);
	f = fopen(src, "w");
	ASSERT_TRUE(f != NULL);
	fputs("#include <stdlib.h>\n"
	      "__attribute__((noinline)) long leaf(long *a, int n) { long s = 0; for (int i = 0; i < n; i++) s += a[i] * a[i]; return s; }\n"
	      "__attribute__((noinline)) long mid(int n) { long a[64]; for (int i = 0; i < 64; i++) a[i] = i * n; return leaf(a, 64) + leaf(a, n & 63); }\n"
	      "int main(int c, char **v) { (void)v; return (int)mid(c); }\n",
	      f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cc -O2 -g -fno-asynchronous-unwind-tables -Wl,--no-eh-frame-hdr -o %s %s 2>/dev/null", bin, src);
	if (system(cmd) != 0) {
		fprintf(stderr, "  (cc failed or missing: skipped)\n");
	} else {
		ASSERT_EQ_INT(ks_cfi_compile(bin, &t), 0);
		EXPECT_TRUE(t.debug_frame);
		EXPECT_TRUE(t.fdes >= 3);
		bad = check_against_readelf(bin, ".debug_frame", &t, &checked, &plt);
		if (bad >= 0) {
			EXPECT_EQ_INT(bad, 0);
			EXPECT_TRUE(checked >= 3);
		}
		ks_cfi_table_free(&t);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	EXPECT_EQ_INT(system(cmd), 0);
}
