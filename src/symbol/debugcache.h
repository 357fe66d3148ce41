/* A cache of debug files with their compressed sections stored decompressed, by build-id: libdw decompresses them at every open otherwise. */
#ifndef KS_SYMBOL_DEBUGCACHE_H
#define KS_SYMBOL_DEBUGCACHE_H

#include <stddef.h>

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

#endif
