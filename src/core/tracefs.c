/* tracefs discovery, mounting it for ksight alone when absent, and why it cannot be had (EACCES vs ENOENT). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/btf.h>
#include "core/bpfutil.h"
#include "core/log.h"
#include "core/procfs.h"
#include "core/tracefs.h"

#define TARGET "/sys/kernel/tracing"

/* What this process did to have tracefs: nothing, a mount of its own namespace, or a shared mount. */
static enum { MNT_NONE, MNT_PRIVATE, MNT_SHARED } mounted_how;
static char mounted_at[256];
static int mount_err; /* negative errno of the failed mount, 0 when none failed */

/*
 * Guards everything above and the mount point found: instances in several
 * threads may ask for tracefs at once, and only one may mount it.
 */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char found_at[256];

/*
 * The mount point once found is kept: the returned string is never
 * rewritten while another thread may read it (a mount point of tracefs
 * does not move while ksight runs).  Called with @lock held.
 */
static const char *find_mount(void)
{
	char dir[sizeof(found_at)];

	if (found_at[0])
		return found_at;
	if (ks_procfs_mount_of(NULL, "tracefs", dir, sizeof(dir)))
		return NULL;
	memcpy(found_at, dir, sizeof(dir));
	return found_at;
}

const char *ks_tracefs_find(void)
{
	const char *dir;

	pthread_mutex_lock(&lock);
	dir = find_mount();
	pthread_mutex_unlock(&lock);
	return dir;
}

static void unmount_at_exit(void)
{
	ks_tracefs_release();
}

/*
 * A mount in a mount namespace of ksight's own: nobody else sees it, and it
 * goes with the process however that ends (kill -9 too), so two ksight runs
 * never unmount each other's tracefs.  The copy of the tree is made private
 * first, or the mount would propagate back to the shared tree.
 */
static int mount_private(void)
{
	if (unshare(CLONE_NEWNS))
		return -errno;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return -errno; /* now in a namespace that still propagates: do not mount */
	if (mount("tracefs", TARGET, "tracefs", 0, NULL))
		return -errno;
	return 0;
}

static const char *tracefs_dir(bool *mounted);

const char *ks_tracefs_dir(bool *mounted)
{
	const char *dir;
	int err;

	pthread_mutex_lock(&lock);
	dir = tracefs_dir(mounted);
	err = errno;
	pthread_mutex_unlock(&lock);
	errno = err;
	return dir;
}

static const char *tracefs_dir(bool *mounted)
{
	const char *dir = find_mount();
	int err;

	if (mounted)
		*mounted = false;
	if (dir)
		return dir;
	if (mount_err) {
		errno = -mount_err;
		return NULL;
	}
	err = mount_private();
	if (err == -EINVAL) {
		/*
		 * unshare refuses a threaded process: a shared mount then, taken
		 * down at exit
		 */
		if (mount("tracefs", TARGET, "tracefs", 0, NULL)) {
			err = -errno;
		} else {
			err = 0;
			mounted_how = MNT_SHARED;
			atexit(unmount_at_exit);
		}
	} else if (!err) {
		mounted_how = MNT_PRIVATE;
	}
	if (err) {
		mount_err = err;
		p_dbg("cannot mount tracefs at %s: %s", TARGET, strerror(-err));
		errno = -err;
		return NULL;
	}
	snprintf(mounted_at, sizeof(mounted_at), "%s", TARGET);
	p_info("tracefs was not mounted: mounted it at %s %s", TARGET,
	       mounted_how == MNT_PRIVATE ? "for ksight alone (a private mount namespace)"
					  : "until ksight exits");
	if (mounted)
		*mounted = true;
	return TARGET;
}

void ks_tracefs_release(void)
{
	pthread_mutex_lock(&lock);
	if (mounted_how == MNT_SHARED && umount2(mounted_at, MNT_DETACH))
		p_dbg("cannot unmount tracefs at %s: %s", mounted_at, strerror(errno));
	/* a private mount goes with the namespace, when the process exits */
	if (mounted_how == MNT_SHARED) {
		mounted_how = MNT_NONE;
		found_at[0] = 0; /* at exit, or by a caller done with tracefs: nobody reads it now */
	}
	pthread_mutex_unlock(&lock);
}

int ks_tracefs_access(void)
{
	const char *dir = ks_tracefs_dir(NULL);
	char p[512];

	if (!dir)
		return errno == EPERM || errno == EACCES ? -EPERM : -ENODEV;
	/* effective ids and capabilities (AT_EACCESS), as the open that follows will see them */
	snprintf(p, sizeof(p), "%s/events", dir);
	if (faccessat(AT_FDCWD, p, R_OK | X_OK, AT_EACCESS))
		return errno == ENOENT ? -ENODEV : -EACCES;
	return 0;
}

const char *ks_tracefs_explain(int err, char *buf, size_t len)
{
	const char *dir = ks_tracefs_find();
	struct stat st;

	if (err == -EACCES && dir && !stat(dir, &st))
		snprintf(buf, len,
			 "tracefs at %s (mode %04o, owner %u:%u) is not readable by uid %u: add CAP_DAC_READ_SEARCH, "
			 "or remount it with gid=%u,mode=0750 (see docs/doctor.md)",
			 dir, (unsigned int)(st.st_mode & 07777), (unsigned int)st.st_uid, (unsigned int)st.st_gid,
			 (unsigned int)geteuid(), (unsigned int)getegid());
	else if (err == -EACCES)
		snprintf(buf, len, "tracefs is not readable by uid %u: add CAP_DAC_READ_SEARCH (see docs/doctor.md)",
			 (unsigned int)geteuid());
	else if (err == -EPERM)
		snprintf(buf, len,
			 "tracefs is not mounted and mounting it needs CAP_SYS_ADMIN: mount it once (mount -t tracefs "
			 "-o gid=%u,mode=0750 nodev %s), or add CAP_SYS_ADMIN",
			 (unsigned int)getegid(), TARGET);
	else
		snprintf(buf, len, "tracefs cannot be had: %s", strerror(err < 0 ? -err : err));
	return buf;
}

int ks_tracepoint_exists(const char *sys, const char *event)
{
	struct btf *btf = ks_kernel_btf();
	const char *dir;
	struct stat st;
	char p[512];

	/*
	 * Every tracepoint of the kernel proper has a typedef btf_trace_<name>
	 * (include/trace/bpf_probe.h), readable without tracefs or privilege.
	 * Syscall events (syscalls:sys_enter_*) and modules' tracepoints have
	 * none there: tracefs tells.
	 */
	if (btf && strcmp(sys, "syscalls")) {
		snprintf(p, sizeof(p), "btf_trace_%s", event);
		if (btf__find_by_name_kind(btf, p, BTF_KIND_TYPEDEF) > 0)
			return 1;
	}
	dir = ks_tracefs_dir(NULL);
	if (!dir)
		return errno == EPERM || errno == EACCES ? -EPERM : -ENODEV;
	snprintf(p, sizeof(p), "%s/events/%s/%s", dir, sys, event);
	if (!stat(p, &st))
		return 1;
	return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
}
