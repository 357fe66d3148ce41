/* A cache of debug files with their compressed sections stored decompressed, by build-id: libdw decompresses them at every open otherwise. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "core/log.h"
#include "symbol/debugcache.h"

/*
 * Why: Debian's -dbg packages ship their debug sections compressed
 * (SHF_COMPRESSED, zlib), and libdw inflates every one of them when it
 * opens the file: 83 ms for libc's (4 MB on disk, 10 MB inflated), at
 * every run that names an inlined frame in libc or unwinds through it, a
 * sixth of a short system-wide profile's CPU.  The inflated copy opens in
 * 3 ms.  It is named by build-id, so a copy is never stale: a changed file
 * has another build-id.  perf keeps such a cache too (~/.debug).
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

/* The copy's name, "DIR/HEX.debug", and the name it is made under; negative errno. */
static int names_of(const unsigned char *bid, int len, char *name, char *tmp, char *hex)
{
	const char *dir = ks_debugcache_dir();
	int n;

	if (!dir)
		return -ENOTSUP;
	if (len <= 0 || len > 64)
		return -EINVAL;
	for (int i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", bid[i]);
	n = snprintf(name, PATH_MAX, "%s/%s.debug", dir, hex);
	if (n < 0 || n >= PATH_MAX || snprintf(tmp, PATH_MAX, "%s/.%s.XXXXXX", dir, hex) >= PATH_MAX)
		return -ENAMETOOLONG;
	return 0;
}

int ks_debugcache_find(const unsigned char *bid, int len, char **path)
{
	char name[PATH_MAX], tmp[PATH_MAX], hex[2 * 64 + 1];
	int err = names_of(bid, len, name, tmp, hex), fd;

	*path = NULL;
	if (err)
		return err;
	fd = open_own(name);
	if (fd < 0)
		return fd;
	*path = strdup(name);
	if (!*path) {
		close(fd);
		return -ENOMEM;
	}
	return fd;
}

int ks_debugcache_add(int fd, const unsigned char *bid, int len)
{
	char name[PATH_MAX], tmp[PATH_MAX], hex[2 * 64 + 1];
	int err = names_of(bid, len, name, tmp, hex), out;

	if (err)
		return err;
	err = has_compressed(fd);
	if (err <= 0)
		return err ? err : -ENOENT;
	err = make_dirs(ks_debugcache_dir());
	out = err ? err : mkstemp(tmp);
	if (out < 0)
		return err ? err : -errno;
	/* made aside and renamed: a concurrent run sees the whole copy or none */
	err = inflate_copy(fd, out);
	if (!err && (fsync(out) || rename(tmp, name)))
		err = -errno;
	close(out);
	if (err) {
		unlink(tmp);
		p_dbg("debug cache: no copy of build-id %s in %s: %s", hex, ks_debugcache_dir(), strerror(-err));
		return err;
	}
	p_dbg("debug cache: %s made (decompressed)", name);
	return 0;
}
