/* --pin: pins a fresh load's maps, programs and links in bpffs; adopts them on the next load instead of loading again. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <unistd.h>
#include <stddef.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include "core/log.h"
#include "core/pin.h"
#include "ksight/filter.h"

#ifndef BPF_FS_MAGIC
#define BPF_FS_MAGIC 0xcafe4a11
#endif
#define BPFFS "/sys/fs/bpf"
#define MAX_ADOPTED 32

static const char *pin_dir;
/* a prepare said why the pins cannot be adopted: the loader's own summary would only repeat it */
static bool pin_failed;
/* the objects whose last prepare adopted (collectors ask after load, through their own code paths) */
static const struct bpf_object *adopted[MAX_ADOPTED];

void ks_pin_scope(const char *dir)
{
	pin_dir = dir;
	pin_failed = false;
}

bool ks_pin_failed(void)
{
	return pin_failed;
}

const char *ks_pin_dir(void)
{
	return pin_dir;
}

static unsigned int adoptions;

unsigned int ks_pin_adoptions(void)
{
	return adoptions;
}

static void set_adopted(const struct bpf_object *obj, bool on)
{
	int free_at = -1;

	if (on)
		adoptions++;
	for (int i = 0; i < MAX_ADOPTED; i++) {
		if (adopted[i] == obj) {
			if (!on)
				adopted[i] = NULL;
			return;
		}
		if (!adopted[i] && free_at < 0)
			free_at = i;
	}
	if (on && free_at >= 0)
		adopted[free_at] = obj;
}

bool ks_pin_adopted(const struct bpf_object *obj)
{
	for (int i = 0; i < MAX_ADOPTED; i++)
		if (adopted[i] == obj)
			return true;
	return false;
}

/* @dir/map_<name>: bpffs refuses names with a dot, which libbpf's internal maps have (".bss") */
static void map_path(char *buf, size_t len, const char *dir, const struct bpf_map *m)
{
	char *p;

	snprintf(buf, len, "%s/map_%s", dir, bpf_map__name(m));
	for (p = buf + strlen(dir) + 1; *p; p++)
		if (*p == '.')
			*p = '_';
}

static bool on_bpffs(const char *path)
{
	struct statfs sf;

	return !statfs(path, &sf) && (unsigned long)sf.f_type == (unsigned long)BPF_FS_MAGIC;
}

int ks_pin_own(const char *path, bool dir)
{
	struct stat st;

	if (lstat(path, &st))
		return -errno;
	if (S_ISLNK(st.st_mode)) {
		/* bpf_obj_get and opendir follow links: a planted one would hand ksight another's object */
		p_err("pinned '%s' is a symbolic link, which ksight never makes: refusing to follow it; remove it or use "
		      "another --pin directory", path);
		return -ELOOP;
	}
	if (dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
		p_err("pinned '%s' is not a %s, as ksight makes it: refusing it; remove it or use another --pin directory",
		      path, dir ? "directory" : "pinned object");
		return -EPERM;
	}
	if (st.st_uid != geteuid()) {
		/* bpffs gives a pin its pinner's uid */
		p_err("pinned '%s' belongs to uid %u, not to this uid %u: ksight adopts only what it pinned; remove it or "
		      "use another --pin directory", path, (unsigned)st.st_uid, (unsigned)geteuid());
		return -EPERM;
	}
	return 0;
}

int ks_pin_obj_get(const char *path)
{
	int fd, err = ks_pin_own(path, false);

	if (err)
		return err;
	fd = bpf_obj_get(path);
	return fd < 0 ? -errno : fd;
}

/*
 * Offset in .rodata of the filter's own-pid field, or -1: every run sets it
 * to its own pid, so it differs between two runs with the same options.
 * An adopted program keeps leaving out the pid of the serve that loaded it.
 */
static long self_pid_offset(const struct bpf_object *obj)
{
	const struct btf *btf = bpf_object__btf(obj);
	const struct btf_var_secinfo *v;
	const struct btf_type *sec;
	int id;

	if (!btf || (id = btf__find_by_name_kind(btf, ".rodata", BTF_KIND_DATASEC)) < 0)
		return -1;
	sec = btf__type_by_id(btf, (__u32)id);
	v = btf_var_secinfos(sec);
	for (int i = 0; i < btf_vlen(sec); i++, v++) {
		const struct btf_type *var = btf__type_by_id(btf, v->type);

		if (var && !strcmp(btf__name_by_offset(btf, var->name_off), "ks_filter"))
			return (long)v->offset + (long)offsetof(struct ks_filter, not_tgid);
	}
	return -1;
}

/* One pinned map checked against @m as configured now: same kind and sizes, and for .rodata the same contents. */
static int check_map(const struct bpf_object *obj, const struct bpf_map *m, int fd, const char *path)
{
	struct bpf_map_info info = { 0 };
	__u32 len = sizeof(info);
	const char *name = bpf_map__name(m);
	int err = 0;

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	if (strncmp(info.name, name, sizeof(info.name) - 1)) {
		p_err("pinned map '%s' is named '%s', not '%.*s' as ksight names it: refusing to adopt it; run 'ksight "
		      "unpin %s' first", path, info.name, (int)sizeof(info.name) - 1, name, pin_dir);
		return -EPERM;
	}
	if (info.type != bpf_map__type(m) || info.key_size != bpf_map__key_size(m) ||
	    info.value_size != bpf_map__value_size(m) || info.max_entries != bpf_map__max_entries(m)) {
		p_err("pinned map '%s' has other sizes than these options give (%u x %u+%u bytes pinned, %u x %u+%u now); "
		      "run 'ksight unpin %s' first",
		      path, info.max_entries, info.key_size, info.value_size, bpf_map__max_entries(m), bpf_map__key_size(m),
		      bpf_map__value_size(m), pin_dir);
		return -ESTALE;
	}
	if (strlen(name) > 7 && !strcmp(name + strlen(name) - 7, ".rodata")) {
		size_t sz = 0;
		const void *want = bpf_map__initial_value((struct bpf_map *)m, &sz);
		void *have = calloc(1, info.value_size);
		__u32 zero = 0;

		if (!have)
			return -ENOMEM;
		long self = self_pid_offset(obj);

		if (bpf_map_lookup_elem(fd, &zero, have))
			err = -errno;
		else if (want && self >= 0 && (size_t)self + sizeof(__u32) <= sz)
			memcpy((char *)have + self, (const char *)want + self, sizeof(__u32));
		if (!err && (!want || sz != info.value_size || memcmp(want, have, sz))) {
			p_err("the programs pinned under '%s' were loaded with other options (filters, keys or sizes); "
			      "run 'ksight unpin %s' first, or start with the same options",
			      pin_dir, pin_dir);
			err = -ESTALE;
		}
		free(have);
	}
	return err;
}

/* Reuses every pinned map of @obj under @base and loads none of its programs; 0 or negative errno after a one-line error. */
static int adopt(struct bpf_object *obj, const char *base)
{
	char path[PATH_MAX + 64];
	struct bpf_program *p;
	struct bpf_map *m;
	int err;

	bpf_object__for_each_program(p, obj) {
		snprintf(path, sizeof(path), "%s/prog_%s", base, bpf_program__name(p));
		if (bpf_program__autoload(p) != !access(path, F_OK)) {
			p_err("the programs pinned under '%s' are another set than these options load; run 'ksight unpin %s' "
			      "first, or start with the same options",
			      pin_dir, pin_dir);
			return -ESTALE;
		}
	}
	bpf_object__for_each_map(m, obj) {
		int fd;

		if (!bpf_map__autocreate(m))
			continue;
		map_path(path, sizeof(path), base, m);
		fd = ks_pin_obj_get(path);
		if (fd == -ELOOP || fd == -EPERM)
			return fd; /* said why */
		if (fd < 0) {
			err = fd;
			p_err("cannot adopt pinned map '%s': %s; run 'ksight unpin %s' first", path, strerror(-err), pin_dir);
			return err;
		}
		err = check_map(obj, m, fd, path);
		if (!err && bpf_map__reuse_fd(m, fd))
			err = -errno;
		close(fd); /* reuse_fd took its own copy */
		if (err)
			return err;
	}
	/* the pinned links hold the old programs attached: load none of ours */
	bpf_object__for_each_program(p, obj)
		bpf_program__set_autoload(p, false);
	return 0;
}

int ks_pin_prepare(struct bpf_object *obj, const char *hook)
{
	char base[PATH_MAX], path[PATH_MAX + 64];
	int err;

	set_adopted(obj, false);
	if (!pin_dir)
		return 0;
	if (pin_failed)
		return -EPERM; /* a refused directory, said at the first hook variant: the loader tries the others */
	snprintf(base, sizeof(base), "%s/%s", pin_dir, bpf_object__name(obj));
	err = ks_pin_own(base, true);
	if (err == -ENOENT)
		return 0;
	if (err) {
		pin_failed = true;
		return err;
	}
	/* another hook variant was pinned: the loader goes on to the next one */
	snprintf(path, sizeof(path), "%s/hook_%s", base, hook);
	if (access(path, F_OK))
		return -ENOENT;
	err = adopt(obj, base);
	pin_failed = err < 0;
	if (err < 0)
		return err;
	set_adopted(obj, true);
	return 1;
}

int ks_pin_prog_get(struct bpf_object *obj, const struct bpf_program *p)
{
	char path[PATH_MAX + 64];

	if (!pin_dir)
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/%s/prog_%s", pin_dir, bpf_object__name(obj), bpf_program__name(p));
	return ks_pin_obj_get(path);
}

int ks_pin_extra_get(const struct bpf_object *obj, const char *name)
{
	char path[PATH_MAX + 64];

	if (!pin_dir)
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/%s/%s", pin_dir, bpf_object__name(obj), name);
	return ks_pin_obj_get(path);
}

int ks_pin_seq_open(const struct bpf_object *obj, uint32_t *id)
{
	char path[PATH_MAX + 64];
	struct bpf_map_info info = { 0 };
	__u32 len = sizeof(info);
	int fd, err;

	if (!pin_dir)
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/%s/drain_seq", pin_dir, bpf_object__name(obj));
	fd = ks_pin_obj_get(path);
	if (fd == -ENOENT) {
		/* pins made before there was a sequence: their serve emptied the maps as it read them */
		fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "ks_drain_seq", 4, 8, 1, NULL);
		if (fd >= 0 && bpf_obj_pin(fd, path)) {
			err = -errno;
			close(fd);
			return err;
		}
	}
	if (fd < 0)
		return fd; /* libbpf 1.x: negative errno */
	if (bpf_obj_get_info_by_fd(fd, &info, &len) || info.type != BPF_MAP_TYPE_ARRAY || info.value_size != 8 ||
	    strcmp(info.name, "ks_drain_seq")) {
		close(fd);
		return -EBADMSG;
	}
	*id = info.id;
	return fd;
}

/* Removes the pins in directory @path (one level) and the directory; a link there is removed, not followed. */
static int remove_dir(const char *path)
{
	struct dirent *e;
	int err = 0, fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d) {
		err = errno;
		if (fd >= 0)
			close(fd);
		if (err == ELOOP || err == ENOTDIR)
			return unlink(path) ? -errno : 0;
		return err == ENOENT ? 0 : -err;
	}
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		/* hook markers are empty directories */
		if (unlinkat(fd, e->d_name, 0) && unlinkat(fd, e->d_name, AT_REMOVEDIR) && !err)
			err = -errno;
	}
	closedir(d);
	if (rmdir(path) && !err)
		err = -errno;
	return err;
}

int ks_pin_attached(struct bpf_object *obj, struct bpf_object_skeleton *skel, const char *hook)
{
	return ks_pin_attached_extra(obj, skel, hook, NULL, 0);
}

int ks_pin_attached_extra(struct bpf_object *obj, struct bpf_object_skeleton *skel, const char *hook,
			  const struct ks_pin_extra *x, int nx)
{
	char tmp[PATH_MAX], fin[PATH_MAX], path[PATH_MAX + 64];
	const char *name = bpf_object__name(obj);
	struct bpf_program *p;
	struct bpf_map *m;
	int err = 0;

	if (!pin_dir || ks_pin_adopted(obj))
		return 0;
	snprintf(tmp, sizeof(tmp), "%s/%s_new", pin_dir, name);
	snprintf(fin, sizeof(fin), "%s/%s", pin_dir, name);
	remove_dir(tmp); /* a crash's leftover */
	if (mkdir(tmp, 0700))
		return -errno;
	bpf_object__for_each_map(m, obj) {
		map_path(path, sizeof(path), tmp, m);
		if (bpf_map__fd(m) >= 0 && bpf_obj_pin(bpf_map__fd(m), path) && !err)
			err = -errno;
	}
	bpf_object__for_each_program(p, obj) {
		const char *pn = bpf_program__name(p);

		if (bpf_program__fd(p) < 0)
			continue;
		snprintf(path, sizeof(path), "%s/prog_%s", tmp, pn);
		if (bpf_obj_pin(bpf_program__fd(p), path) && !err)
			err = -errno;
	}
	for (int i = 0; i < skel->prog_cnt; i++) {
		struct bpf_link *l = *skel->progs[i].link;

		if (!l)
			continue;
		snprintf(path, sizeof(path), "%s/link_%s", tmp, skel->progs[i].name);
		if (bpf_obj_pin(bpf_link__fd(l), path) && !err)
			err = -errno;
	}
	for (int i = 0; i < nx && !err; i++) {
		snprintf(path, sizeof(path), "%s/%s", tmp, x[i].name);
		if (bpf_obj_pin(x[i].fd, path))
			err = -errno;
	}
	/* the drain sequence starts with the maps it speaks of: at 0, in the same rename */
	if (!err) {
		int sfd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "ks_drain_seq", 4, 8, 1, NULL);

		snprintf(path, sizeof(path), "%s/drain_seq", tmp);
		if (sfd < 0 || bpf_obj_pin(sfd, path))
			err = -errno;
		if (sfd >= 0)
			close(sfd);
	}
	/* the variant a later load must be trying to adopt these */
	snprintf(path, sizeof(path), "%s/hook_%s", tmp, hook);
	if (!err && mkdir(path, 0700))
		err = -errno;
	if (!err && rename(tmp, fin))
		err = -errno;
	if (err) {
		p_err("cannot pin '%s' under '%s': %s", name, pin_dir, strerror(-err));
		remove_dir(tmp);
	}
	return err;
}

/*
 * The one-line error for @dir that this user cannot reach or create: pins
 * are files in a filesystem like others, so they take search access to
 * every directory above @dir and write access to @dir (or to its parent,
 * to make it).  bpffs is usually mounted mode 0700, root's: names the
 * directory that stops the user and what root can do about it.
 */
static int pin_access_error(const char *dir, const char *parent, bool reach)
{
	struct stat st;
	unsigned uid = (unsigned)geteuid();

	if (stat(parent, &st)) {
		p_err("--pin '%s': cannot reach '%s': %s (uid %u needs search access to every directory above it, or "
		      "CAP_DAC_READ_SEARCH)", dir, parent, strerror(errno), uid);
		return -EACCES;
	}
	p_err("--pin '%s': '%s' (mode %04o, owner %u:%u) does not let uid %u %s: as root, 'mkdir %s && chown %u %s' "
	      "and give uid %u search access to the directories above it (or CAP_DAC_READ_SEARCH); no other "
	      "capability than CAP_BPF is needed to pin",
	      dir, parent, (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid, (unsigned)st.st_gid, uid,
	      reach ? "reach it" : "create it", dir, uid, dir, uid);
	return -EACCES;
}

int ks_pin_check_dir(const char *dir)
{
	char parent[PATH_MAX];
	struct stat st;
	char *slash;

	if (!dir[0] || strlen(dir) >= sizeof(parent) - 64) {
		p_err("--pin '%s': expected a directory on a bpf filesystem, e.g. " BPFFS "/ksight", dir);
		return -EINVAL;
	}
	/* a directory meant for the usual place, where nothing is mounted yet: mount bpffs there */
	if ((!strncmp(dir, BPFFS "/", strlen(BPFFS) + 1) || !strcmp(dir, BPFFS)) && !on_bpffs(BPFFS)) {
		if (mount("bpf", BPFFS, "bpf", 0, "mode=0700")) {
			int e = errno;

			/* mount(2) is CAP_SYS_ADMIN's alone: say so, and what root can do once for this user */
			p_err("--pin '%s': nothing is mounted at " BPFFS " and mounting bpffs there failed: %s%s", dir,
			      strerror(e),
			      e == EPERM ? " (mounting needs CAP_SYS_ADMIN: as root, 'mount -t bpf bpf " BPFFS
					   "', then make DIR and give it to this user)"
					 : "");
			return e == EPERM ? -EPERM : -EINVAL;
		}
		fprintf(stderr, "ksight: mounted a bpf filesystem at " BPFFS " (it was not mounted)\n");
	}
	bool reach;

	if (!lstat(dir, &st)) {
		if (S_ISLNK(st.st_mode)) {
			p_err("--pin '%s': a symbolic link; give the directory itself (ksight follows no link where it pins)",
			      dir);
			return -EINVAL;
		}
		if (!S_ISDIR(st.st_mode) || !on_bpffs(dir)) {
			p_err("--pin '%s': not a directory on a bpf filesystem; use one under " BPFFS, dir);
			return -EINVAL;
		}
		/* what is pinned there is adopted and written to: only this uid may have put it there */
		if (st.st_uid != geteuid() || (st.st_mode & 022)) {
			p_err("--pin '%s': owned by uid %u, mode %04o: it must be this uid's (%u) and writable by it alone, "
			      "or pins there could be anyone's", dir, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777),
			      (unsigned)geteuid());
			return -EPERM;
		}
		return 0;
	}
	/* EACCES: a directory on the way is not searchable, whether DIR exists or not */
	reach = errno == EACCES;
	snprintf(parent, sizeof(parent), "%s", dir);
	slash = strrchr(parent, '/');
	if (slash == parent)
		slash[1] = 0;
	else if (slash)
		*slash = 0;
	else
		snprintf(parent, sizeof(parent), ".");
	if (reach)
		return pin_access_error(dir, parent, true);
	if (!on_bpffs(parent)) {
		p_err("--pin '%s': '%s' is not on a bpf filesystem; use a directory under " BPFFS, dir, parent);
		return -EINVAL;
	}
	if (mkdir(dir, 0700)) {
		if (errno == EACCES || errno == EPERM)
			return pin_access_error(dir, parent, false);
		p_err("--pin '%s': cannot create it: %s", dir, strerror(errno));
		return -EINVAL;
	}
	return 0;
}

int ks_pin_remove(const char *dir)
{
	char path[PATH_MAX + 256];
	struct stat dst;
	struct dirent *e;
	int err = 0, left = 0;
	DIR *d;

	if (access(dir, X_OK) && errno == EACCES) {
		p_err("unpin: cannot reach '%s': %s (uid %u needs search access to it and the directories above, and "
		      "write access to it)", dir, strerror(errno), (unsigned)geteuid());
		return -EACCES;
	}
	if (lstat(dir, &dst) || !S_ISDIR(dst.st_mode) || !on_bpffs(dir) || !(d = opendir(dir))) {
		p_err("unpin: '%s' is not a directory on a bpf filesystem", dir);
		return -EINVAL;
	}
	while ((e = readdir(d))) {
		struct stat st;
		int r;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		/*
		 * Only what ksight made: the objects' directories and the exporter's
		 * state are named ks_*, pinned by DIR's owner (bpffs gives a pin its
		 * pinner's uid; serve --pin refuses a DIR of another uid), and never
		 * links.  Anything else, a look-alike planted by another uid
		 * included, stays.
		 */
		if (strncmp(e->d_name, "ks_", 3) || lstat(path, &st) || S_ISLNK(st.st_mode) ||
		    st.st_uid != dst.st_uid) {
			left++;
			continue;
		}
		r = unlink(path) ? remove_dir(path) : 0;
		if (r && !err)
			err = r;
	}
	closedir(d);
	if (err) {
		p_err("unpin: cannot remove everything under '%s': %s", dir, strerror(-err));
		return err;
	}
	if (left)
		fprintf(stderr, "ksight: left '%s' in place: it holds %d pins ksight did not make\n", dir, left);
	else if (rmdir(dir)) {
		err = -errno;
		/* a DIR root made for a non-root serve, in a parent only root writes: the pins are gone, DIR stays */
		if (err == -EACCES || err == -EPERM) {
			fprintf(stderr, "ksight: removed every pin under '%s'; the directory itself stays (its parent is not "
					"writable by uid %u)\n", dir, (unsigned)geteuid());
			err = 0;
		} else {
			p_err("unpin: cannot remove '%s': %s", dir, strerror(-err));
		}
	}
	return err;
}

int ks_pin_lock(const char *dir)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	socklen_t len;
	int fd;

	if (stat(dir, &st))
		return -errno;
	/* an abstract socket named by the directory's identity: the kernel frees it with the process, kill -9 included */
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
			  (size_t)snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "ksight-pin-%llx-%llx",
					   (unsigned long long)st.st_dev, (unsigned long long)st.st_ino));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, len)) {
		int err = errno == EADDRINUSE ? -EBUSY : -errno;

		close(fd);
		if (err == -EBUSY)
			p_err("--pin '%s': another ksight serve is using it; stop that one first", dir);
		else
			p_err("--pin '%s': cannot take its lock: %s", dir, strerror(-err));
		return err;
	}
	return fd;
}
