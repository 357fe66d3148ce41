/* tracefs discovery and on-demand mounting. */
#include <errno.h>
#include <mntent.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core/log.h"
#include "core/tracefs.h"

static const char *find_mount(void)
{
	static char dir[256];
	struct mntent *m;
	FILE *f = setmntent("/proc/self/mounts", "r");

	if (!f)
		return NULL;
	dir[0] = 0;
	while ((m = getmntent(f))) {
		if (!strcmp(m->mnt_type, "tracefs")) {
			snprintf(dir, sizeof(dir), "%s", m->mnt_dir);
			break;
		}
	}
	endmntent(f);
	return dir[0] ? dir : NULL;
}

const char *ks_tracefs_dir(bool *mounted)
{
	static const char *const target = "/sys/kernel/tracing";
	const char *dir = find_mount();

	if (mounted)
		*mounted = false;
	if (dir)
		return dir;
	if (mount("tracefs", target, "tracefs", 0, NULL)) {
		int err = errno;

		p_dbg("cannot mount tracefs at %s: %s", target, strerror(err));
		errno = err;
		return NULL;
	}
	p_info("mounted tracefs at %s", target);
	if (mounted)
		*mounted = true;
	return target;
}

int ks_tracepoint_exists(const char *sys, const char *event)
{
	const char *dir = ks_tracefs_dir(NULL);
	char p[512];

	if (!dir)
		return -errno;
	snprintf(p, sizeof(p), "%s/events/%s/%s", dir, sys, event);
	return access(p, F_OK) == 0;
}
