/* Unit tests of the debug cache (src/symbol/debugcache.c): a compressed debug file's inflated copy, made once, read by libdw as the original, refused when others can write it. */
#include <fcntl.h>
#include <gelf.h>
#include <sys/stat.h>
#include <time.h>
#include <elfutils/libdw.h>
#include "symbol/debugcache.h"
#include "test.h"

T_CACHE_DIR(dir)

/* The compile units' count and the first one's name, from libdw. */
static int cus_of(const char *path, char *first, size_t len)
{
	int fd = open(path, O_RDONLY), n = 0;
	Dwarf *d = fd >= 0 ? dwarf_begin(fd, DWARF_C_READ) : NULL;
	Dwarf_Off off = 0, next;
	size_t hs;

	*first = 0;
	while (d && dwarf_nextcu(d, off, &next, &hs, NULL, NULL, NULL) == 0) {
		Dwarf_Die die;

		if (!n && dwarf_offdie(d, off + hs, &die) && dwarf_diename(&die))
			snprintf(first, len, "%s", dwarf_diename(&die));
		n++;
		off = next;
	}
	if (d)
		dwarf_end(d);
	if (fd >= 0)
		close(fd);
	return n;
}

static int compressed_sections(const char *path)
{
	int fd = open(path, O_RDONLY), n = 0;
	Elf *e = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	Elf_Scn *s = NULL;

	while (e && (s = elf_nextscn(e, s))) {
		GElf_Shdr sh;

		n += gelf_getshdr(s, &sh) && (sh.sh_flags & SHF_COMPRESSED);
	}
	if (e)
		elf_end(e);
	if (fd >= 0)
		close(fd);
	return n;
}

TEST(inflated_copy_made_once_and_read_as_the_original)
{
	static const unsigned char bid[] = { 0xde, 0xad, 0xbe, 0xef, 0x01 };
	char src[512], cmd[1200], a[256], b[256], *path = NULL, *again = NULL;
	struct stat st1, st2;
	int fd, cfd, n;

	snprintf(src, sizeof(src), "%s/zdebug.elf", dir);
	snprintf(cmd, sizeof(cmd), "objcopy --compress-debug-sections=zlib /proc/%d/exe %s", getpid(), src);
	/* binutils is among scripts/setup.sh's packages */
	ASSERT_EQ_INT(system(cmd), 0);
	ASSERT_TRUE(compressed_sections(src) > 0);
	fd = open(src, O_RDONLY);
	ASSERT_TRUE(fd >= 0);
	EXPECT_EQ_INT(ks_debugcache_find(bid, sizeof(bid), &path), -ENOENT);
	ASSERT_EQ_INT(ks_debugcache_add(fd, bid, sizeof(bid)), 0);
	cfd = ks_debugcache_find(bid, sizeof(bid), &path);
	ASSERT_TRUE(cfd >= 0);
	EXPECT_TRUE(path && strstr(path, "/deadbeef01.debug"));
	EXPECT_EQ_INT(compressed_sections(path), 0);
	n = cus_of(src, a, sizeof(a));
	EXPECT_TRUE(n > 0);
	EXPECT_EQ_INT(cus_of(path, b, sizeof(b)), n);
	EXPECT_EQ_STR(b, a);
	ASSERT_EQ_INT(stat(path, &st1), 0);
	EXPECT_EQ_INT(st1.st_mode & 077, 0);
	close(cfd);
	/* the second open finds the same copy */
	cfd = ks_debugcache_find(bid, sizeof(bid), &again);
	ASSERT_TRUE(cfd >= 0);
	ASSERT_EQ_INT(stat(again, &st2), 0);
	EXPECT_EQ_U64(st2.st_ino, st1.st_ino);
	EXPECT_EQ_U64(st2.st_mtime, st1.st_mtime);
	close(cfd);
	/* a copy others could write is not trusted */
	chmod(path, 0666);
	free(again);
	again = NULL;
	EXPECT_EQ_INT(ks_debugcache_find(bid, sizeof(bid), &again), -EPERM);
	EXPECT_TRUE(again == NULL);
	close(fd);
	free(path);
}

TEST(nothing_compressed_nothing_cached)
{
	static const unsigned char bid[] = { 0x12, 0x34 };
	char *path = NULL, name[512];
	int fd = open("/proc/self/exe", O_RDONLY);

	ASSERT_TRUE(fd >= 0);
	EXPECT_EQ_INT(ks_debugcache_add(fd, bid, sizeof(bid)), -ENOENT);
	EXPECT_EQ_INT(ks_debugcache_find(bid, sizeof(bid), &path), -ENOENT);
	EXPECT_TRUE(path == NULL);
	snprintf(name, sizeof(name), "%s/1234.debug", dir);
	EXPECT_TRUE(access(name, F_OK) != 0);
	close(fd);
}

/* Writes entry HEX.cfi of one-byte build-id @b with @kib KiB, last used @age days ago. */
static void aged_entry(unsigned char b, int kib, int age)
{
	static char buf[1024];
	struct iovec iov[64];
	char name[512];
	struct timespec t[2];

	for (int i = 0; i < kib; i++)
		iov[i] = (struct iovec){ buf, sizeof(buf) };
	if (ks_debugcache_write(&b, 1, "cfi", iov, kib))
		abort();
	snprintf(name, sizeof(name), "%s/%02x.cfi", dir, b);
	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[0].tv_sec -= (time_t)age * 86400;
	t[1] = t[0];
	utimensat(AT_FDCWD, name, t, 0);
}

static bool has_entry(unsigned char b)
{
	char name[512];

	snprintf(name, sizeof(name), "%s/%02x.cfi", dir, b);
	return access(name, F_OK) == 0;
}

TEST(trim_removes_the_least_recently_used_to_three_quarters)
{
	char keep[512], tmp[512];
	int fd;

	/* the other cases' entries out; no limit while these are made (each write trims by $KSIGHT_DEBUG_CACHE_MAX) */
	snprintf(tmp, sizeof(tmp), "rm -f %s/*", dir);
	ASSERT_EQ_INT(system(tmp), 0);
	setenv("KSIGHT_DEBUG_CACHE_MAX", "0", 1);
	for (int i = 0; i < 8; i++)
		aged_entry((unsigned char)(0xa0 + i), 16, 8 - i); /* a0 the oldest, 16 KiB each: 128 KiB */
	/* one being made (a dot name) is never counted or removed */
	snprintf(tmp, sizeof(tmp), "%s/.a9.XXXXXX", dir);
	fd = mkstemp(tmp);
	ASSERT_TRUE(fd >= 0);
	close(fd);
	EXPECT_EQ_INT(ks_debugcache_trim(1 << 20, NULL), 0);
	/* 96 KiB: down to 72, the three oldest go; a1 is kept as asked */
	snprintf(keep, sizeof(keep), "%s/a1.cfi", dir);
	EXPECT_EQ_INT(ks_debugcache_trim(96 << 10, keep), 4);
	EXPECT_TRUE(!has_entry(0xa0));
	EXPECT_TRUE(has_entry(0xa1));
	EXPECT_TRUE(!has_entry(0xa2) && !has_entry(0xa3) && !has_entry(0xa4));
	for (int i = 5; i < 8; i++)
		EXPECT_TRUE(has_entry((unsigned char)(0xa0 + i)));
	EXPECT_TRUE(access(tmp, F_OK) == 0);
	unlink(tmp);
	/* a new entry trims by the limit in the environment, itself kept */
	setenv("KSIGHT_DEBUG_CACHE_MAX", "40K", 1);
	aged_entry(0xb0, 32, 0);
	EXPECT_TRUE(has_entry(0xb0));
	EXPECT_TRUE(!has_entry(0xa5) && !has_entry(0xa6) && !has_entry(0xa7));
	unsetenv("KSIGHT_DEBUG_CACHE_MAX");
}

/* libelf wants its version set before the first elf_begin */
__attribute__((constructor)) static void elf_init(void)
{
	elf_version(EV_CURRENT);
}
