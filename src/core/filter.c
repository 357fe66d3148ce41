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
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "core/budget.h"
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

/* The followed set (KS_F_FOLLOW): one map and one attachment of its programs for the whole process. */
static int follow_fd = -1;
static struct bpf_link *follow_links[2];
/* what ks_filter_build said to follow: the map is made at the first load, whose error then says what is missing */
static pid_t follow_pid;
static uint64_t follow_budget;
static const char *const follow_progs[2] = { "ks_follow_fork", "ks_follow_exit" };

/*
 * Makes the followed set with the command in it, before it runs: its first
 * system call passes.  1/64 of the budget (256 at least): the set holds the
 * command's living processes only (exits leave it), a few hundred at most
 * for a build, and every instance's budget counts the one map.
 */
static int follow_create(void)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = BPF_F_NO_PREALLOC);
	struct ks_budget b;
	uint32_t n, key = 0, zero = 0, one = 1;
	int fd, err;

	ks_budget_init(&b, follow_budget);
	n = ks_budget_rows(&b, 1.0 / 64, ks_budget_row_bytes(&b, BPF_MAP_TYPE_HASH, 4, 4, BPF_F_NO_PREALLOC), 256,
			   1u << 20, false);
	/* the rows leave out the bucket array, which ks_map_bytes (what the budget counts) has */
	while (n > 256 && ks_map_bytes(BPF_MAP_TYPE_HASH, 4, 4, n, BPF_F_NO_PREALLOC, b.ncpus) > b.limit / 64)
		n -= n / 16 ? n / 16 : 1;
	if (n < 256)
		n = 256;
	/* a refusal (no CAP_BPF) is the load's to explain, as without -- CMD */
	fd = bpf_map_create(BPF_MAP_TYPE_HASH, "ks_follow", sizeof(key), sizeof(one), n, &o);
	if (fd < 0)
		return -errno;
	/* key 0: the count of forks left out (no process forks as tgid 0) */
	key = (uint32_t)follow_pid;
	if (bpf_map_update_elem(fd, &zero, &zero, BPF_ANY) || bpf_map_update_elem(fd, &key, &one, BPF_ANY)) {
		err = -errno;
		close(fd);
		return err;
	}
	p_dbg("-- CMD: followed pids: a hash of %u entries", n);
	follow_fd = fd;
	return 0;
}

int ks_follow_prepare(struct bpf_object *obj)
{
	struct bpf_map *m = bpf_object__find_map_by_name(obj, "ks_follow");
	int err;

	if (!follow_pid || !m)
		return 0;
	err = follow_fd < 0 ? follow_create() : 0;
	if (!err)
		err = bpf_map__reuse_fd(m, follow_fd);
	if (err)
		return err;
	for (int i = 0; i < 2; i++) {
		struct bpf_program *p = bpf_object__find_program_by_name(obj, follow_progs[i]);

		if (!p)
			continue;
		bpf_program__set_autoload(p, true);
		/* attached once for the process (ks_follow_attach), not by each skeleton */
		bpf_program__set_autoattach(p, false);
	}
	return 0;
}

int ks_follow_attach(struct bpf_object *obj)
{
	struct bpf_program *p[2];
	int err;

	if (follow_fd < 0 || follow_links[0])
		return 0;
	for (int i = 0; i < 2; i++) {
		p[i] = bpf_object__find_program_by_name(obj, follow_progs[i]);
		/* an object that left them out (funclat's per-function ones): the next one attaches */
		if (!p[i] || bpf_program__fd(p[i]) < 0)
			return 0;
	}
	for (int i = 0; i < 2; i++) {
		follow_links[i] = bpf_program__attach(p[i]);
		if (!follow_links[i]) {
			err = -errno;
			p_err("-- CMD: cannot attach %s, which follows the command's forks: %s", follow_progs[i],
			      strerror(-err));
			ks_follow_release();
			return err;
		}
	}
	return 0;
}

uint64_t ks_follow_missed(void)
{
	uint32_t zero = 0, v = 0;

	if (follow_fd < 0 || bpf_map_lookup_elem(follow_fd, &zero, &v))
		return 0;
	return v;
}

void ks_follow_release(void)
{
	for (int i = 0; i < 2; i++) {
		bpf_link__destroy(follow_links[i]);
		follow_links[i] = NULL;
	}
	if (follow_fd >= 0)
		close(follow_fd);
	follow_fd = -1;
	follow_pid = 0;
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
	if (c->cmd && c->cmd->follow) {
		/* -- CMD with no cgroup of its own: the set of its pids, which its forks extend (made at the first load) */
		follow_pid = c->cmd->pid;
		follow_budget = c->max_memory;
		f->flags |= KS_F_FOLLOW;
	} else if (c->cmd) {
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
