/* User side of the shared filters: resolve and validate pid, tid, cgroup, CPU list and comm. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>
#include <linux/magic.h>
#include "core/cmd.h"
#include "core/filter.h"
#include "core/log.h"
#include "core/parse.h"
#include "core/procfs.h"

/* a mount point longer than this is refused by the lookup, as no cgroup2 mount */
static char cgroup2_path[1024];

static void cgroup2_once(void)
{
	if (ks_procfs_mount_of(NULL, "cgroup2", cgroup2_path, sizeof(cgroup2_path)))
		cgroup2_path[0] = 0;
}

const char *ks_cgroup2_mount(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	/* looked up once per process: every instance's filter and the cgroup cache ask */
	pthread_once(&once, cgroup2_once);
	return cgroup2_path[0] ? cgroup2_path : NULL;
}

int ks_cgroup_id(const char *path, __u64 *id)
{
	struct {
		struct file_handle fh;
		uint64_t id;
	} h = { .fh.handle_bytes = sizeof(uint64_t) };
	struct statfs sfs;
	struct stat st;
	int mount_id;

	if (statfs(path, &sfs) || stat(path, &st))
		return -errno;
	/* a file such as cgroup.procs has a kernfs id too, which no task ever has */
	if (sfs.f_type != CGROUP2_SUPER_MAGIC || !S_ISDIR(st.st_mode))
		return -ENOTDIR;
	/* the kernfs node id in the handle is the cgroup id BPF sees */
	if (name_to_handle_at(AT_FDCWD, path, &h.fh, &mount_id, 0))
		return -errno;
	memcpy(id, h.fh.f_handle, sizeof(*id));
	return 0;
}

int ks_filter_build(const struct ks_common *c, struct ks_filter *f)
{
	memset(f, 0, sizeof(*f));
	/*
	 * ksight's own reads of its maps, writes and sleeps are not what the
	 * user asked about.  The tgid BPF sees is the initial namespace's:
	 * in another pid namespace getpid() differs and nothing is left out.
	 */
	if (!c->include_self)
		f->not_tgid = (uint32_t)getpid();
	if (c->pid) {
		if (!ks_procfs_pid_exists(NULL, c->pid, 0)) {
			p_err("no process with pid %u", c->pid);
			return -ENOENT;
		}
		f->flags |= KS_F_TGID;
		f->tgid = c->pid;
	}
	if (c->tid) {
		/* /proc/TID works for any thread; with -p it must also be one of its threads */
		if (c->pid ? !ks_procfs_pid_exists(NULL, c->pid, c->tid)
			   : !ks_procfs_pid_exists(NULL, c->tid, 0)) {
			p_err(c->pid ? "no thread %u in process %u" : "no thread with tid %u", c->tid, c->pid);
			return -ENOENT;
		}
		f->flags |= KS_F_TID;
		f->tid = c->tid;
	}
	if (c->cgroup) {
		char buf[PATH_MAX];
		const char *path = c->cgroup, *mnt = ks_cgroup2_mount();
		int err;

		/* a path that is not there as given is tried below the v2 mount */
		if (access(path, F_OK) && path[0] != '/' && mnt) {
			snprintf(buf, sizeof(buf), "%s/%s", mnt, path);
			path = buf;
		} else if (access(path, F_OK) && mnt && strncmp(path, mnt, strlen(mnt))) {
			snprintf(buf, sizeof(buf), "%s%s", mnt, path);
			if (!access(buf, F_OK))
				path = buf;
		}
		err = ks_cgroup_id(path, &f->cgroup_id);
		if (err == -ENOTDIR) {
			p_err("'%s' is not a cgroup v2 directory (v2 is mounted at %s)", KS_ESC(c->cgroup),
			      mnt ? mnt : "no mount point");
			return err;
		}
		if (err) {
			p_err("cannot use cgroup '%s': %s", KS_ESC(c->cgroup), strerror(-err));
			return err;
		}
		f->flags |= KS_F_CGROUP;
	}
	if (c->cmd) {
		/* -- CMD: its cgroup, which its children inherit (-c is refused with it) */
		f->flags |= KS_F_CGROUP;
		f->cgroup_id = c->cmd->cgroup_id;
	}
	if (c->has_cpus) {
		long ncpu = sysconf(_SC_NPROCESSORS_CONF);
		bool any = false;

		for (long i = 0; i < KS_MAX_CPUS; i++) {
			if (!(c->cpus[i / 64] & (1ull << (i % 64))))
				continue;
			if (i >= ncpu) {
				p_err("CPU %ld in '%s' does not exist (this machine has %ld)", i, KS_ESC(c->cpus_arg), ncpu);
				return -ENOENT;
			}
			any = true;
		}
		if (!any) {
			p_err("empty CPU list '%s'", KS_ESC(c->cpus_arg));
			return -EINVAL;
		}
		memcpy(f->cpus, c->cpus, sizeof(f->cpus));
		f->flags |= KS_F_CPU;
	}
	if (c->has_comm) {
		memcpy(f->comm, c->comm, sizeof(f->comm));
		f->flags |= KS_F_COMM;
	}
	return 0;
}

void ks_filter_describe(const struct ks_common *c, const struct ks_filter *f, struct ks_report *r)
{
	if (f->flags & KS_F_TGID)
		ks_report_meta_num(r, "pid", f->tgid);
	if (f->flags & KS_F_TID)
		ks_report_meta_num(r, "tid", f->tid);
	if ((f->flags & KS_F_CGROUP) && c->cgroup) {
		ks_report_meta_str(r, "cgroup", c->cgroup);
		ks_report_meta_num(r, "cgroup_id", f->cgroup_id);
	}
	if (f->flags & KS_F_CPU)
		ks_report_meta_str(r, "cpus", c->cpus_arg);
	if (f->flags & KS_F_COMM)
		ks_report_meta_str(r, "comm", c->comm);
}
