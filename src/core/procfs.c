/* Readers of /proc and /sys files relative to a root directory (see procfs.h). */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <mntent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/procfs.h"

static void path_of(char *buf, size_t len, const char *root, const char *path)
{
	snprintf(buf, len, "%s%s", root ? root : "", path);
}

/* ROOT@path opened for reading, @buf emptied first so a failed read leaves "" */
static FILE *open_at(const char *root, const char *path, char *buf, size_t len)
{
	char p[PATH_MAX];

	if (!len) {
		errno = EINVAL;
		return NULL;
	}
	buf[0] = 0;
	path_of(p, sizeof(p), root, path);
	return fopen(p, "re");
}

int ks_procfs_read(const char *root, const char *path, char *buf, size_t len)
{
	FILE *f = open_at(root, path, buf, len);
	size_t n;
	int err = 0;

	if (!f)
		return -errno;
	n = fread(buf, 1, len - 1, f);
	if (ferror(f))
		err = -EIO;
	fclose(f);
	buf[err ? 0 : n] = 0;
	return err ? err : (int)n;
}

int ks_procfs_line(const char *root, const char *path, char *buf, size_t len)
{
	FILE *f = open_at(root, path, buf, len);
	size_t n;
	int err = 0;

	if (!f)
		return -errno;
	if (!fgets(buf, (int)len, f))
		err = ferror(f) ? -EIO : -ENODATA;
	fclose(f);
	if (err) {
		buf[0] = 0;
		return err;
	}
	n = strlen(buf);
	while (n && isspace((unsigned char)buf[n - 1]))
		buf[--n] = 0;
	return 0;
}

int ks_procfs_u64(const char *root, const char *path, uint64_t *out)
{
	char buf[32], *end;
	unsigned long long v;
	int err = ks_procfs_line(root, path, buf, sizeof(buf));

	if (err)
		return err;
	errno = 0;
	v = strtoull(buf, &end, 10);
	if (end == buf || *end || errno || buf[0] == '-')
		return -EINVAL;
	*out = v;
	return 0;
}

int ks_procfs_int(const char *root, const char *path, int *out)
{
	char buf[32], *end;
	long v;
	int err = ks_procfs_line(root, path, buf, sizeof(buf));

	if (err)
		return err;
	errno = 0;
	v = strtol(buf, &end, 10);
	if (end == buf || *end || errno || v < INT_MIN || v > INT_MAX)
		return -EINVAL;
	*out = (int)v;
	return 0;
}

uint64_t ks_procfs_pid_max(const char *root)
{
	uint64_t v;

	if (ks_procfs_u64(root, "/proc/sys/kernel/pid_max", &v) || !v)
		return 4194304;
	return v;
}

int ks_procfs_comm(const char *root, uint32_t pid, char *comm)
{
	char p[48];
	int err;

	snprintf(p, sizeof(p), "/proc/%u/comm", pid);
	err = ks_procfs_line(root, p, comm, 16);
	if (!err && !comm[0])
		err = -ENODATA;
	return err;
}

int ks_procfs_stat(const char *root, uint32_t pid, char *state, int *nthreads)
{
	char p[48], buf[1024], *s;
	int err;

	snprintf(p, sizeof(p), "/proc/%u/stat", pid);
	err = ks_procfs_read(root, p, buf, sizeof(buf));
	if (err < 0)
		return err;
	/* the name may hold spaces and parentheses: the fields start after the last ')' */
	s = strrchr(buf, ')');
	/* after the name: state, then fields 4..20; num_threads is field 20 */
	if (!s || sscanf(s + 1, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %d", state,
			 nthreads) != 2)
		return -EINVAL;
	return 0;
}

bool ks_procfs_pid_exists(const char *root, uint32_t pid, uint32_t tid)
{
	char rel[64], p[PATH_MAX];

	if (tid)
		snprintf(rel, sizeof(rel), "/proc/%u/task/%u", pid, tid);
	else
		snprintf(rel, sizeof(rel), "/proc/%u/status", pid);
	path_of(p, sizeof(p), root, rel);
	return access(p, F_OK) == 0;
}

int ks_procfs_mount_of(const char *root, const char *fstype, char *dir, size_t len)
{
	char p[PATH_MAX];
	struct mntent m, *e;
	char line[4096];
	int err = -ENOENT;
	FILE *f;

	path_of(p, sizeof(p), root, "/proc/self/mounts");
	f = setmntent(p, "re");
	if (!f)
		return -errno;
	/* getmntent_r: two threads may look up mounts at once */
	while ((e = getmntent_r(f, &m, line, sizeof(line)))) {
		if (!strcmp(e->mnt_type, fstype)) {
			snprintf(dir, len, "%s", e->mnt_dir);
			err = 0;
			break;
		}
	}
	endmntent(f);
	return err;
}
