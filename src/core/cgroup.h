/* cgroup v2 ids back to paths for display: one walk of the hierarchy, cached, walked again on a miss. */
#ifndef KS_CORE_CGROUP_H
#define KS_CORE_CGROUP_H

#include <stddef.h>
#include <linux/types.h>

/*
 * Writes the path of the cgroup with id @id (as BPF sees it) relative to
 * the v2 mount, "/" for the root, into @buf.  A miss walks the hierarchy
 * again, at most once a second; -ENOENT when the cgroup is not (or no
 * longer) there, -ENODEV when no v2 hierarchy is mounted.
 */
int ks_cgroup_path(__u64 id, char *buf, size_t len);
/* Drops the cache (tests, and the end of a run). */
void ks_cgroup_cache_free(void);

#endif
