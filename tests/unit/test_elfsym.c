/* Unit tests of funclat's ELF targets (src/symbol/elfsym.c) on this very binary: function globs, aliases, USDT notes, library names. */
#include <sys/sdt.h>
#include "symbol/elfsym.h"
#include "test.h"

/* Functions the globs must find in /proc/self/exe; the alias shares the first's address. */
__attribute__((noinline, used)) int elfsym_target_one(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

__attribute__((noinline, used)) int elfsym_target_two(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 2;
}

int __elfsym_target_alias(int x) __attribute__((alias("elfsym_target_one")));

TEST(function_glob_finds_each_function_once)
{
	struct ks_elf_func *f;
	size_t n, nifunc;

	ASSERT_EQ_INT(ks_elf_funcs("/proc/self/exe", "*elfsym_target_*", &f, &n, &nifunc), 0);
	/* the alias is the same address as elfsym_target_one: one function, under the name without underscores */
	ASSERT_EQ_U64(n, 2);
	EXPECT_EQ_STR(f[0].name, "elfsym_target_one");
	EXPECT_EQ_STR(f[1].name, "elfsym_target_two");
	EXPECT_TRUE(f[0].offset != 0 && f[0].offset != f[1].offset);
	EXPECT_EQ_U64(nifunc, 0);
	ks_elf_funcs_free(f, n);
	ASSERT_EQ_INT(ks_elf_funcs("/proc/self/exe", "elfsym_no_such_*", &f, &n, &nifunc), 0);
	EXPECT_EQ_U64(n, 0);
	ks_elf_funcs_free(f, n);
	EXPECT_EQ_INT(ks_elf_funcs("/etc/hostname", "*", &f, &n, &nifunc), -ENOEXEC);
	EXPECT_EQ_INT(ks_elf_funcs("/nonexistent", "*", &f, &n, &nifunc), -ENOENT);
}

TEST(usdt_notes_by_provider_and_name)
{
	struct ks_elf_usdt *u;
	size_t n;
	volatile int fire = 0;

	if (fire) {
		DTRACE_PROBE(ks_unit, first);
		DTRACE_PROBE(ks_unit, first); /* a probe at two places is one target */
		DTRACE_PROBE1(ks_unit, second, fire);
	}
	ASSERT_EQ_INT(ks_elf_usdts("/proc/self/exe", "ks_unit", "*", &u, &n), 0);
	ASSERT_EQ_U64(n, 2);
	EXPECT_EQ_STR(u[0].provider, "ks_unit");
	EXPECT_EQ_STR(u[0].name, "first");
	EXPECT_EQ_STR(u[1].name, "second");
	ks_elf_usdts_free(u, n);
	ASSERT_EQ_INT(ks_elf_usdts("/proc/self/exe", "ks_*", "sec*", &u, &n), 0);
	EXPECT_EQ_U64(n, 1);
	ks_elf_usdts_free(u, n);
}

TEST(library_and_program_names_resolve)
{
	char path[4096], self[64];

	/* libc by its soname and its short name, as the dynamic linker's directories hold it */
	ASSERT_EQ_INT(ks_elf_resolve("libc.so.6", 0, path, sizeof(path)), 0);
	EXPECT_TRUE(strstr(path, "/libc.so.6") != NULL);
	ASSERT_EQ_INT(ks_elf_resolve("libc", 0, path, sizeof(path)), 0);
	EXPECT_TRUE(strstr(path, "libc.so.6") != NULL); /* not the libc.so linker script */
	/* through a process's maps: its own root's view */
	snprintf(self, sizeof(self), "/proc/%d/root/", (int)getpid());
	ASSERT_EQ_INT(ks_elf_resolve("libc", (uint32_t)getpid(), path, sizeof(path)), 0);
	EXPECT_TRUE(!strncmp(path, self, strlen(self)) && strstr(path, "libc.so.6"));
	/* a program on PATH */
	ASSERT_EQ_INT(ks_elf_resolve("sh", 0, path, sizeof(path)), 0);
	EXPECT_TRUE(strstr(path, "/sh") != NULL);
	EXPECT_EQ_INT(ks_elf_resolve("libksight_no_such_lib", 0, path, sizeof(path)), -ENOENT);
	EXPECT_EQ_INT(ks_elf_resolve("/nonexistent/x", 0, path, sizeof(path)), -ENOENT);
}
