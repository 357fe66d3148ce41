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
/*
 * -- CMD followed by pid (KS_F_FOLLOW, when it has no cgroup of its own):
 * ks_filter_build notes the command's pid and budget; the first
 * ks_follow_prepare makes the one followed-set map, sized from that budget
 * and seeded with the pid; every object the process loads takes it.
 * ks_follow_prepare, between open and load: @obj uses that map and loads its
 * two follow programs (nothing when not following).
 * ks_follow_attach, after load: the first object loaded attaches them, once
 * for the whole process.  Both 0 or negative errno.
 */
struct bpf_object;
int ks_follow_prepare(struct bpf_object *obj);
int ks_follow_attach(struct bpf_object *obj);
/* Forks of followed processes that the full set left out (their events are not seen); 0 when not following. */
uint64_t ks_follow_missed(void);
/* Detaches the follow programs and closes the map (at the command's release). */
void ks_follow_release(void);
/* Mount point of the cgroup v2 hierarchy, or NULL. */
const char *ks_cgroup2_mount(void);
/* The cgroup v2 id of @path (what bpf_get_current_cgroup_id returns), or negative errno. */
int ks_cgroup_id(const char *path, __u64 *id);

#endif
