/* Unit tests of the debug cache (src/symbol/debugcache.c): a compressed debug file's inflated copy, made once, read by libdw as the original, refused when others can write it. */
#include <fcntl.h>
#include <gelf.h>
#include <sys/stat.h>
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

/* libelf wants its version set before the first elf_begin */
__attribute__((constructor)) static void elf_init(void)
{
	elf_version(EV_CURRENT);
}
