/* Unit tests of the cache of compiled CFI tables (src/profile/cfi.c, ks_cfi_table_fd): a table read back as compiled, and every damaged or untrusted entry refused for a compile. */
#include <dirent.h>
#include <fcntl.h>
#include <gelf.h>
#include <sys/stat.h>
#include <elfutils/libdwelf.h>
#include "profile/cfi.h"
#include "test.h"

T_CACHE_DIR(dir)

/* A file with thousands of rows where there is one (libc), else this test's own binary. */
static const char *subject(void)
{
	static const char *libc = "/lib/x86_64-linux-gnu/libc.so.6";
	static char self[64];

	if (!access(libc, R_OK))
		return libc;
	snprintf(self, sizeof(self), "/proc/%d/exe", (int)getpid());
	return self;
}

/* The cache entry of @file: DIR/HEX.cfi by its build-id; false when it has none. */
static bool entry_of(const char *file, char *path, size_t n)
{
	int fd = open(file, O_RDONLY);
	Elf *e;
	const void *bid = NULL;
	ssize_t len;
	char hex[129] = "";

	elf_version(EV_CURRENT);
	e = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	len = e ? dwelf_elf_gnu_build_id(e, &bid) : -1;

	for (ssize_t i = 0; i < len && i < 64; i++)
		snprintf(hex + 2 * i, 3, "%02x", ((const unsigned char *)bid)[i]);
	snprintf(path, n, "%s/%s.cfi", dir, hex);
	if (e)
		elf_end(e);
	if (fd >= 0)
		close(fd);
	return len > 0;
}

static int entries(void)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	while (d && (de = readdir(d)))
		n += de->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

/* ks_cfi_table_fd on @file: 1 read from the cache, 0 compiled, negative errno. */
static int table_of(const char *file, bool cache, struct ks_cfi_table *t, struct ks_cfi_loads *ld)
{
	int fd = open(file, O_RDONLY), r;

	if (fd < 0)
		return -errno;
	r = ks_cfi_table_fd(fd, cache, t, ld);
	close(fd);
	return r;
}

static bool same_table(const struct ks_cfi_table *a, const struct ks_cfi_loads *la, const struct ks_cfi_table *b,
		       const struct ks_cfi_loads *lb)
{
	return a->n == b->n && !memcmp(a->rows, b->rows, a->n * sizeof(*a->rows)) && a->fdes == b->fdes &&
	       a->unsup == b->unsup && a->plt == b->plt && a->debug_frame == b->debug_frame && la->n == lb->n &&
	       !memcmp(la->seg, lb->seg, sizeof(la->seg[0]) * (size_t)la->n);
}

TEST(compiled_once_then_read_back_the_same)
{
	const char *file = subject();
	struct ks_cfi_table c, a, b;
	struct ks_cfi_loads la, lb;
	char path[512];
	struct stat st;

	ASSERT_TRUE(entry_of(file, path, sizeof(path)));
	unlink(path);
	ASSERT_EQ_INT(ks_cfi_compile(file, &c), 0);
	/* a miss: compiled, and the entry written */
	ASSERT_EQ_INT(table_of(file, true, &a, &la), 0);
	ASSERT_EQ_INT(stat(path, &st), 0);
	EXPECT_EQ_INT(st.st_mode & 0777, 0600);
	/* the compile is the plain one's */
	EXPECT_TRUE(a.n == c.n && !memcmp(a.rows, c.rows, c.n * sizeof(*c.rows)));
	EXPECT_TRUE(la.n >= 2);
	/* a hit: the same rows, counts and segments */
	ASSERT_EQ_INT(table_of(file, true, &b, &lb), 1);
	EXPECT_TRUE(same_table(&a, &la, &b, &lb));
	fprintf(stderr, "  %s: %zu rows, %d segments, entry of %lld bytes\n", file, b.n, lb.n, (long long)st.st_size);
	ks_cfi_table_free(&a);
	ks_cfi_table_free(&b);
	ks_cfi_table_free(&c);
}

/*
 * Ways to spoil an entry.  The offsets are those of cfi.c's struct
 * cache_hdr: magic at 0, version at 8, the first segment's vaddr at 64.
 */
enum damage { D_TRUNC_ROW, D_TRUNC_HDR, D_VERSION, D_MAGIC, D_SEGMENT, D_UNSORTED, D_MODE, D_N };
static const char *const damage_name[D_N] = { "truncated by half a row", "truncated in its header", "another version",
					       "another magic", "other segments", "rows out of order", "mode 0666" };

static void damage(const char *path, enum damage d)
{
	int fd = open(path, O_RDWR);
	struct stat st;
	uint32_t v;
	struct ks_cfi_row r[2], sw[2];

	if (fd < 0 || fstat(fd, &st))
		abort();
	switch (d) {
	case D_TRUNC_ROW: if (ftruncate(fd, st.st_size - 4)) abort(); break;
	case D_TRUNC_HDR: if (ftruncate(fd, 40)) abort(); break;
	case D_VERSION:
		if (pread(fd, &v, 4, 8) != 4) abort();
		v++;
		if (pwrite(fd, &v, 4, 8) != 4) abort();
		break;
	case D_MAGIC: if (pwrite(fd, "X", 1, 0) != 1) abort(); break;
	case D_SEGMENT:
		if (pread(fd, &v, 4, 64) != 4) abort();
		v += 0x1000;
		if (pwrite(fd, &v, 4, 64) != 4) abort();
		break;
	case D_UNSORTED:
		/* the last two rows swapped */
		if (pread(fd, r, sizeof(r), st.st_size - (off_t)sizeof(r)) != sizeof(r)) abort();
		sw[0] = r[1];
		sw[1] = r[0];
		if (pwrite(fd, sw, sizeof(sw), st.st_size - (off_t)sizeof(sw)) != sizeof(sw)) abort();
		break;
	case D_MODE: if (fchmod(fd, 0666)) abort(); break;
	default: abort();
	}
	close(fd);
}

TEST(damaged_or_untrusted_entries_are_compiled_again)
{
	const char *file = subject();
	struct ks_cfi_table want, t;
	struct ks_cfi_loads lw, lt;
	char path[512];
	struct stat st;

	ASSERT_TRUE(entry_of(file, path, sizeof(path)));
	ASSERT_TRUE(table_of(file, true, &want, &lw) >= 0);
	for (int d = 0; d < D_N; d++) {
		/* a good entry to start from */
		ASSERT_TRUE(table_of(file, true, &t, &lt) >= 0);
		ks_cfi_table_free(&t);
		ASSERT_EQ_INT(table_of(file, true, &t, &lt), 1);
		ks_cfi_table_free(&t);
		damage(path, (enum damage)d);
		/* refused: compiled, the same table */
		if (!EXPECT_EQ_INT(table_of(file, true, &t, &lt), 0))
			fprintf(stderr, "  accepted an entry %s\n", damage_name[d]);
		EXPECT_TRUE(same_table(&want, &lw, &t, &lt));
		ks_cfi_table_free(&t);
		/* and written again, private */
		EXPECT_EQ_INT(table_of(file, true, &t, &lt), 1);
		ks_cfi_table_free(&t);
		ASSERT_EQ_INT(stat(path, &st), 0);
		EXPECT_EQ_INT(st.st_mode & 0777, 0600);
	}
	ks_cfi_table_free(&want);
}

TEST(no_build_id_or_cache_off_nothing_written)
{
	char self[64], nobid[512], cmd[1200], path[512];
	struct ks_cfi_table t;
	struct ks_cfi_loads ld;
	int before;

	snprintf(self, sizeof(self), "/proc/%d/exe", (int)getpid());
	/* use_cache false: compiled, nothing written */
	ASSERT_TRUE(entry_of(self, path, sizeof(path)));
	unlink(path);
	before = entries();
	ASSERT_EQ_INT(table_of(self, false, &t, &ld), 0);
	ks_cfi_table_free(&t);
	EXPECT_TRUE(access(path, F_OK) != 0);
	EXPECT_EQ_INT(entries(), before);
	/* a file without a build-id: compiled every time, nothing written (binutils: scripts/setup.sh) */
	snprintf(nobid, sizeof(nobid), "%s/.nobid.elf", dir);
	snprintf(cmd, sizeof(cmd), "objcopy --remove-section .note.gnu.build-id %s %s", self, nobid);
	ASSERT_EQ_INT(system(cmd), 0);
	EXPECT_TRUE(!entry_of(nobid, path, sizeof(path)));
	for (int i = 0; i < 2; i++) {
		EXPECT_EQ_INT(table_of(nobid, true, &t, &ld), 0);
		EXPECT_TRUE(t.n > 10);
		ks_cfi_table_free(&t);
	}
	EXPECT_EQ_INT(entries(), before);
}
