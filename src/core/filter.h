/* Turns the shared filter options into the kernel-side struct ks_filter, checking that each target exists. */
#ifndef KS_CORE_FILTER_H
#define KS_CORE_FILTER_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "ksight/filter.h"
#include "core/opts.h"
#include "core/report.h"

/*
 * Fills @f from @c.  A pid, tid or cgroup that does not exist is -ENOENT,
 * a path that is not a cgroup v2 directory -ENOTDIR, both after a one-line
 * p_err: the caller exits 2 before anything is loaded.
 */
int ks_filter_build(const struct ks_common *c, struct ks_filter *f);
/* Adds the active filters to the report's "filters" object. */
void ks_filter_describe(const struct ks_common *c, const struct ks_filter *f, struct ks_report *r);
/* Mount point of the cgroup v2 hierarchy, or NULL. */
const char *ks_cgroup2_mount(void);
/* The cgroup v2 id of @path (what bpf_get_current_cgroup_id returns), or negative errno. */
int ks_cgroup_id(const char *path, __u64 *id);

#endif
