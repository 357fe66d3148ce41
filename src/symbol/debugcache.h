/* ksight's cache of what it derives from ELF files, by build-id: debug files stored decompressed (libdw inflates them at every open otherwise), compiled CFI tables. */
#ifndef KS_SYMBOL_DEBUGCACHE_H
#define KS_SYMBOL_DEBUGCACHE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/*
 * The cache directory: $KSIGHT_DEBUG_CACHE ("off" or empty: none), else
 * $XDG_CACHE_HOME/ksight/debug, else $HOME/.cache/ksight/debug; NULL: no
 * cache.  Decided once per process.
 */
const char *ks_debugcache_dir(void);

/*
 * A descriptor of the cached decompressed copy of the debug file with
 * build-id @bid (@len bytes), *@path its name (malloc'd); -ENOENT: none
 * (-EPERM: one others could write, not trusted), -ENOTSUP: no cache.
 */
int ks_debugcache_find(const unsigned char *bid, int len, char **path);

/*
 * Caches the decompressed copy of the debug file open at @fd (build-id
 * @bid), for the next runs: 0; -ENOENT: it has nothing compressed;
 * -ENOTSUP: no cache; other negative errno: the copy could not be made.
 * @fd is left open.
 */
int ks_debugcache_add(int fd, const unsigned char *bid, int len);

/*
 * The cache's entry "HEX.@suffix" for build-id @bid (@len bytes), opened
 * read-only when it is a regular file of this user that no one else can
 * write; *@path its name (malloc'd) unless @path is NULL.  -ENOENT: none;
 * -EPERM: not trusted; -ENOTSUP: no cache; -EINVAL: a bad build-id or
 * suffix.  What it holds is the caller's to check.
 */
int ks_debugcache_open(const unsigned char *bid, int len, const char *suffix, char **path);

/*
 * Writes the entry "HEX.@suffix" for build-id @bid from @iov (@iovcnt
 * buffers, one after the other), made aside (0600) and renamed into
 * place: readers see a whole entry or none.  Not synced to disk: a reader
 * must check an entry whole (a crash can leave it short).  0 or negative
 * errno (-ENOTSUP: no cache).
 */
int ks_debugcache_write(const unsigned char *bid, int len, const char *suffix, const struct iovec *iov, int iovcnt);

/*
 * Keeps the cache within @max bytes: when its entries (regular files of
 * this user, not the ones being made) take more, the least recently used
 * (the later of access and modification times) are removed until they take
 * three quarters of it; @keep (an entry's full name, or NULL) stays.  Each
 * new entry calls it with the limit of $KSIGHT_DEBUG_CACHE_MAX (a size:
 * 512M by default, 0: none).  How many entries it removed, or negative
 * errno.
 */
int ks_debugcache_trim(uint64_t max, const char *keep);

#endif
