/* ksight's cache of what it derives from ELF files, by build-id: debug files stored decompressed (libdw inflates them at every open otherwise), compiled CFI tables (profile/cfi.c). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "core/log.h"
#include "core/parse.h"
#include "symbol/debugcache.h"

/*
 * Why: Debian's -dbg packages ship their debug sections compressed
 * (SHF_COMPRESSED, zlib), and libdw inflates every one of them when it
 * opens the file: 83 ms for libc's (4 MB on disk, 10 MB inflated), at
 * every run that names an inlined frame in libc or unwinds through it, a
 * sixth of a short system-wide profile's CPU.  The inflated copy opens in
 * 3 ms.  It is named by build-id, so a copy is never stale: a changed file
 * has another build-id.  perf keeps such a cache too (~/.debug).
 *
 * The same directory holds other entries derived from a file by build-id,
 * named HEX.SUFFIX (ks_debugcache_open/_write): --call-graph cfi's compiled
 * unwind tables, HEX.cfi, which spare libdw's compile at every run.
 */

static char cache_dir[PATH_MAX];
static pthread_once_t dir_once = PTHREAD_ONCE_INIT;

static void dir_init(void)
{
	const char *env = getenv("KSIGHT_DEBUG_CACHE"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	int n;

	if (env)
		n = strcmp(env, "off") ? snprintf(cache_dir, sizeof(cache_dir), "%s", env) : 0;
	else if (xdg && *xdg == '/')
		n = snprintf(cache_dir, sizeof(cache_dir), "%s/ksight/debug", xdg);
	else if (home && *home == '/')
		n = snprintf(cache_dir, sizeof(cache_dir), "%s/.cache/ksight/debug", home);
	else
		n = 0;
	if (n <= 0 || n >= (int)sizeof(cache_dir))
		cache_dir[0] = 0;
}

const char *ks_debugcache_dir(void)
{
	pthread_once(&dir_once, dir_init);
	return cache_dir[0] ? cache_dir : NULL;
}

/* mkdir -p @dir, private: the copies are only for this user. */
static int make_dirs(const char *dir)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s", dir);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		if (mkdir(p, 0700) && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	return mkdir(p, 0700) && errno != EEXIST ? -errno : 0;
}

/* Whether @fd's ELF file has a compressed section: 1, 0, or negative errno. */
static int has_compressed(int fd)
{
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	Elf_Scn *s = NULL;
	int found = 0;

	if (!e)
		return -ENOEXEC;
	while (!found && (s = elf_nextscn(e, s))) {
		GElf_Shdr sh;

		found = gelf_getshdr(s, &sh) && (sh.sh_flags & SHF_COMPRESSED);
	}
	elf_end(e);
	return found;
}

/* A copy of @in at @out with every compressed section stored inflated. */
static int inflate_copy(int in, int out)
{
	char buf[1 << 16];
	off_t off = 0;
	Elf *e;
	Elf_Scn *s = NULL;
	ssize_t n;
	int err = 0;

	while ((n = pread(in, buf, sizeof(buf), off)) > 0) {
		for (ssize_t w = 0; w < n;) {
			ssize_t k = write(out, buf + w, (size_t)(n - w));

			if (k < 0)
				return -errno;
			w += k;
		}
		off += n;
	}
	if (n < 0)
		return -errno;
	/* libelf lays the file out again at elf_update: the inflated sections take their room */
	e = elf_begin(out, ELF_C_RDWR, NULL);
	if (!e)
		return -ENOEXEC;
	while (!err && (s = elf_nextscn(e, s))) {
		GElf_Shdr sh;

		if (gelf_getshdr(s, &sh) && (sh.sh_flags & SHF_COMPRESSED) && elf_compress(s, 0, 0) < 0)
			err = -EIO;
	}
	if (!err && elf_update(e, ELF_C_WRITE) < 0)
		err = -EIO;
	elf_end(e);
	return err;
}

/* @name, when it is a regular file of ours that no one else can write: an open descriptor. */
static int open_own(const char *name)
{
	int fd = open(name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

/* An entry's name, "DIR/HEX.SUFFIX", and the name it is made under; negative errno. */
static int names_of(const unsigned char *bid, int len, const char *suffix, char *name, char *tmp, char *hex)
{
	const char *dir = ks_debugcache_dir();
	int n;

	if (!dir)
		return -ENOTSUP;
	if (len <= 0 || len > 64 || !*suffix || strchr(suffix, '/'))
		return -EINVAL;
	for (int i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", bid[i]);
	n = snprintf(name, PATH_MAX, "%s/%s.%s", dir, hex, suffix);
	if (n < 0 || n >= PATH_MAX || snprintf(tmp, PATH_MAX, "%s/.%s.XXXXXX", dir, hex) >= PATH_MAX)
		return -ENAMETOOLONG;
	return 0;
}

int ks_debugcache_open(const unsigned char *bid, int len, const char *suffix, char **path)
{
	char name[PATH_MAX], tmp[PATH_MAX], hex[2 * 64 + 1];
	int err = names_of(bid, len, suffix, name, tmp, hex), fd;

	if (path)
		*path = NULL;
	if (err)
		return err;
	fd = open_own(name);
	if (fd < 0 || !path)
		return fd;
	*path = strdup(name);
	if (!*path) {
		close(fd);
		return -ENOMEM;
	}
	return fd;
}

int ks_debugcache_find(const unsigned char *bid, int len, char **path)
{
	return ks_debugcache_open(bid, len, "debug", path);
}

/*
 * Makes the entry HEX.@suffix: @fill writes it into a private temporary
 * file beside it, which is renamed into place, so that a concurrent run
 * sees the whole entry or none.  @sync: fsync before the rename, for an
 * entry its readers take as it is (a crash could otherwise leave an empty
 * file under the name).
 */
/* $KSIGHT_DEBUG_CACHE_MAX, else 512M; 0: no limit. */
static uint64_t cache_max(void)
{
	const char *env = getenv("KSIGHT_DEBUG_CACHE_MAX");
	uint64_t v;

	if (env && *env && !ks_parse_size(env, &v))
		return v;
	return 512ull << 20;
}

static int make_entry(const unsigned char *bid, int len, const char *suffix, int (*fill)(int out, void *arg), void *arg,
		      bool sync)
{
	char name[PATH_MAX], tmp[PATH_MAX], hex[2 * 64 + 1];
	int err = names_of(bid, len, suffix, name, tmp, hex), out;
	uint64_t max;

	if (err)
		return err;
	err = make_dirs(ks_debugcache_dir());
	out = err ? err : mkostemp(tmp, O_CLOEXEC); /* 0600, O_EXCL: a name of its own, never a link */
	if (out < 0)
		return err ? err : -errno;
	err = fill(out, arg);
	if (!err && ((sync && fsync(out)) || rename(tmp, name)))
		err = -errno;
	close(out);
	if (err) {
		unlink(tmp);
		p_dbg("debug cache: no %s of build-id %s in %s: %s", suffix, hex, ks_debugcache_dir(), strerror(-err));
		return err;
	}
	p_dbg("debug cache: %s made", name);
	/* a cache that only grows fills a disk over months of rebuilt binaries (new build-ids each) */
	max = cache_max();
	if (max)
		ks_debugcache_trim(max, name);
	return 0;
}

/* An entry of the cache, for trimming: its name in the directory, bytes on disk, last use. */
struct centry {
	char name[256];
	uint64_t bytes;
	int64_t used;
};

static int older_first(const void *a, const void *b)
{
	const struct centry *x = a, *y = b;

	return (x->used > y->used) - (x->used < y->used);
}

int ks_debugcache_trim(uint64_t max, const char *keep)
{
	const char *dir = ks_debugcache_dir(), *kbase = keep ? strrchr(keep, '/') : NULL;
	struct centry *e = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0;
	struct dirent *d;
	int removed = 0;
	DIR *dp;

	if (!dir)
		return -ENOTSUP;
	dp = opendir(dir);
	if (!dp)
		return -errno;
	while ((d = readdir(dp))) {
		struct stat st;

		/* "." entries are being made (mkstemp's ".HEX.XXXXXX") or are the directory's own */
		if (d->d_name[0] == '.' || fstatat(dirfd(dp), d->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode) || st.st_uid != geteuid() || strlen(d->d_name) >= sizeof(e->name))
			continue;
		if (n == cap) {
			size_t nc = cap ? 2 * cap : 64;
			struct centry *ne = realloc(e, nc * sizeof(*ne));

			if (!ne) {
				removed = -ENOMEM;
				goto out;
			}
			e = ne;
			cap = nc;
		}
		snprintf(e[n].name, sizeof(e[n].name), "%s", d->d_name);
		e[n].bytes = (uint64_t)st.st_blocks * 512;
		e[n].used = st.st_atime > st.st_mtime ? st.st_atime : st.st_mtime;
		total += e[n].bytes;
		n++;
	}
	if (total <= max)
		goto out;
	qsort(e, n, sizeof(*e), older_first);
	for (size_t i = 0; i < n && total > max / 4 * 3; i++) {
		if (kbase && !strcmp(e[i].name, kbase + 1))
			continue;
		if (!unlinkat(dirfd(dp), e[i].name, 0)) {
			total -= e[i].bytes;
			removed++;
		}
	}
	p_dbg("debug cache: %d entries removed, %llu bytes left in %s (limit %llu)", removed,
	      (unsigned long long)total, dir, (unsigned long long)max);
out:
	closedir(dp);
	free(e);
	return removed;
}

struct iov_arg {
	const struct iovec *iov;
	int n;
};

static int fill_iov(int out, void *arg)
{
	const struct iov_arg *a = arg;

	for (int i = 0; i < a->n; i++)
		for (size_t w = 0; w < a->iov[i].iov_len;) {
			ssize_t k = write(out, (const char *)a->iov[i].iov_base + w, a->iov[i].iov_len - w);

			if (k < 0)
				return -errno;
			w += (size_t)k;
		}
	return 0;
}

int ks_debugcache_write(const unsigned char *bid, int len, const char *suffix, const struct iovec *iov, int iovcnt)
{
	struct iov_arg a = { iov, iovcnt };

	/* not synced: the writers of such entries check them whole at each read (a torn one is refused) */
	return make_entry(bid, len, suffix, fill_iov, &a, false);
}

static int fill_inflated(int out, void *arg)
{
	return inflate_copy(*(int *)arg, out);
}

int ks_debugcache_add(int fd, const unsigned char *bid, int len)
{
	int err;

	if (!ks_debugcache_dir())
		return -ENOTSUP;
	err = has_compressed(fd);
	if (err <= 0)
		return err ? err : -ENOENT;
	/* libdw reads the copy as it finds it: synced before it takes the name */
	return make_entry(bid, len, "debug", fill_inflated, &fd, true);
}
