/* Block-device topology from sysfs: disks, hardware queues and tags, scheduler, flush features, partitions, names. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/blockdev.h"
#include "core/hash.h"
#include "core/procfs.h"

static const char *root_of(const char *root)
{
	return root && *root ? root : "";
}

static int read_devt(const char *root, const char *rel, uint32_t *dev)
{
	unsigned int maj, min;
	char b[64];
	int err = ks_procfs_line(root, rel, b, sizeof(b));

	if (err)
		return err;
	if (sscanf(b, "%u:%u", &maj, &min) != 2 || min > 0xfffff)
		return -EINVAL;
	*dev = KS_BLK_DEV(maj, min);
	return 0;
}

/* Hardware queues of disk @name and the most tags any has. */
static void mq_geometry(const char *root, const char *name, struct ks_blockdev *d)
{
	char p[PATH_MAX];
	struct dirent *de;
	DIR *dir;

	snprintf(p, sizeof(p), "%s/sys/block/%s/mq", root_of(root), name);
	dir = opendir(p);
	while (dir && (de = readdir(dir))) {
		char rel[PATH_MAX], b[32];
		unsigned int n;

		if (de->d_name[0] == '.')
			continue;
		snprintf(rel, sizeof(rel), "/sys/block/%s/mq/%s/nr_tags", name, de->d_name);
		if (ks_procfs_line(root, rel, b, sizeof(b)) || sscanf(b, "%u", &n) != 1)
			continue;
		d->nr_hw++;
		if (n > d->nr_tags)
			d->nr_tags = n;
	}
	if (dir)
		closedir(dir);
	if (!d->nr_tags)
		d->nr_hw = 0;
}

/* Fills @d for disk @name; -errno when it has no dev file. */
static int load_disk(const char *root, const char *name, struct ks_blockdev *d)
{
	char rel[PATH_MAX], b[256];
	int err;

	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "%s", name);
	snprintf(rel, sizeof(rel), "/sys/block/%s/dev", name);
	err = read_devt(root, rel, &d->dev);
	if (err)
		return err;
	mq_geometry(root, name, d);
	/* "[none] mq-deadline" when none is chosen; no file: no scheduler either */
	snprintf(rel, sizeof(rel), "/sys/block/%s/queue/scheduler", name);
	d->sched_none = ks_procfs_line(root, rel, b, sizeof(b)) || strstr(b, "[none]") || !strchr(b, '[');
	snprintf(rel, sizeof(rel), "/sys/block/%s/queue/nr_requests", name);
	if (ks_procfs_line(root, rel, b, sizeof(b)) || sscanf(b, "%u", &d->nr_requests) != 1)
		d->nr_requests = 0;
	snprintf(rel, sizeof(rel), "/sys/block/%s/queue/write_cache", name);
	d->write_back = !ks_procfs_line(root, rel, b, sizeof(b)) && !strcmp(b, "write back");
	snprintf(rel, sizeof(rel), "/sys/block/%s/queue/fua", name);
	d->fua = !ks_procfs_line(root, rel, b, sizeof(b)) && !strcmp(b, "1");
	return 0;
}

int ks_blockdev_scan(const char *root, struct ks_blockdev *out, int max)
{
	char p[PATH_MAX];
	struct dirent *de;
	int n = 0;
	DIR *dir;

	snprintf(p, sizeof(p), "%s/sys/block", root_of(root));
	dir = opendir(p);
	if (!dir)
		return -errno;
	while ((de = readdir(dir))) {
		struct ks_blockdev d;

		if (de->d_name[0] == '.' || load_disk(root, de->d_name, &d) || !d.dev)
			continue;
		if (n < max)
			out[n] = d;
		n++;
	}
	closedir(dir);
	return n;
}

int ks_blockdev_find(const char *root, const char *name, struct ks_blockdev *out)
{
	char rel[PATH_MAX];

	if (!strncmp(name, "/dev/", 5))
		name += 5;
	if (!*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, "..") || strlen(name) >= sizeof(out->name))
		return -ENOENT;
	if (!load_disk(root, name, out))
		return 0;
	snprintf(rel, sizeof(rel), "/sys/class/block/%s/partition", name);
	{
		char b[16];

		if (!ks_procfs_line(root, rel, b, sizeof(b)))
			return -EISDIR;
	}
	return -ENOENT;
}

int ks_blockdev_partitions(const char *root, void (*fn)(uint32_t part, uint32_t disk, void *arg), void *arg)
{
	char p[PATH_MAX];
	struct dirent *de;
	int n = 0;
	DIR *dir;

	snprintf(p, sizeof(p), "%s/sys/class/block", root_of(root));
	dir = opendir(p);
	if (!dir)
		return -errno;
	while ((de = readdir(dir))) {
		char rel[PATH_MAX], real[PATH_MAX], *slash;
		uint32_t part, disk;
		unsigned int maj, min;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(rel, sizeof(rel), "/sys/class/block/%s/partition", de->d_name);
		snprintf(p, sizeof(p), "%s%s", root_of(root), rel);
		if (access(p, F_OK))
			continue;
		snprintf(rel, sizeof(rel), "/sys/class/block/%s/dev", de->d_name);
		if (read_devt(root, rel, &part))
			continue;
		/* the partition's directory sits in its disk's: the parent's dev */
		snprintf(p, sizeof(p), "%s/sys/class/block/%s", root_of(root), de->d_name);
		if (!realpath(p, real) || !(slash = strrchr(real, '/')))
			continue;
		snprintf(slash, sizeof(real) - (size_t)(slash - real), "/dev");
		f = fopen(real, "r");
		if (!f)
			continue;
		if (fscanf(f, "%u:%u", &maj, &min) == 2) {
			disk = KS_BLK_DEV(maj, min);
			fn(part, disk, arg);
			n++;
		}
		fclose(f);
	}
	closedir(dir);
	return n;
}

void ks_blockdev_name(const char *root, uint32_t dev, char *buf, size_t len)
{
	char p[PATH_MAX], link[PATH_MAX];
	const char *base;
	ssize_t n;

	snprintf(p, sizeof(p), "%s/sys/dev/block/%u:%u", root_of(root), KS_BLK_MAJOR(dev), KS_BLK_MINOR(dev));
	n = readlink(p, link, sizeof(link) - 1);
	if (n <= 0) {
		snprintf(buf, len, "?");
		return;
	}
	link[n] = 0;
	base = strrchr(link, '/');
	snprintf(buf, len, "%s", base ? base + 1 : link);
}

int ks_blk_stat_parse(const char *text, uint64_t *f, int max)
{
	int n = 0;

	while (*text && n < max) {
		char *end;
		unsigned long long v;

		while (*text == ' ' || *text == '\t')
			text++;
		if (!*text || *text == '\n')
			break;
		errno = 0;
		v = strtoull(text, &end, 10);
		if (end == text || errno || *text == '-')
			return -EINVAL;
		f[n++] = v;
		text = end;
	}
	return n >= 11 ? n : -EINVAL;
}

/* Adds the stat file ROOT@rel to @q; negative errno when it cannot be read or parsed. */
static int quiet_add(const char *root, const char *rel, struct ks_blk_quiet *q)
{
	char b[512];
	uint64_t f[20];
	int err = ks_procfs_line(root, rel, b, sizeof(b));

	if (!err && ks_blk_stat_parse(b, f, 20) < 0)
		err = -EINVAL;
	if (err)
		return err;
	q->inflight += f[8];
	q->sig = ks_fnv1a(b, strlen(b), ks_fnv1a(rel, strlen(rel), q->sig));
	q->files++;
	return 0;
}

int ks_blockdev_quiet(const char *root, uint32_t dev, struct ks_blk_quiet *q)
{
	char dir[64], rel[PATH_MAX], b[16], link[PATH_MAX];
	const char *name;
	struct dirent *de;
	size_t nlen;
	ssize_t n;
	DIR *d;
	int err;

	memset(q, 0, sizeof(*q));
	q->sig = KS_FNV1A_INIT;
	snprintf(dir, sizeof(dir), "/sys/dev/block/%u:%u", KS_BLK_MAJOR(dev), KS_BLK_MINOR(dev));
	snprintf(rel, sizeof(rel), "%s/stat", dir);
	err = quiet_add(root, rel, q);
	/* a busy disk, the common case, costs this one read */
	if (err || q->inflight)
		return err;
	snprintf(rel, sizeof(rel), "%s/queue/iostats", dir);
	q->iostats = !ks_procfs_line(root, rel, b, sizeof(b)) && strcmp(b, "0") != 0;
	/*
	 * The partitions, subdirectories named after the disk (vda1,
	 * nvme0n1p1): before 6.16 the disk's count holds theirs, from 6.16
	 * each has its own.
	 */
	snprintf(rel, sizeof(rel), "%s%s", root_of(root), dir);
	n = readlink(rel, link, sizeof(link) - 1);
	if (n <= 0)
		return -errno;
	link[n] = 0;
	name = strrchr(link, '/') ? strrchr(link, '/') + 1 : link;
	nlen = strlen(name);
	d = opendir(rel);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char p[PATH_MAX];

		if (strncmp(de->d_name, name, nlen) || !de->d_name[nlen])
			continue;
		snprintf(p, sizeof(p), "%s%s/%s/partition", root_of(root), dir, de->d_name);
		if (access(p, F_OK))
			continue;
		snprintf(rel, sizeof(rel), "%s/%s/stat", dir, de->d_name);
		err = quiet_add(root, rel, q);
		if (err)
			break;
	}
	closedir(d);
	return err;
}

bool ks_blk_quiet_idle(const struct ks_blk_quiet *before, const struct ks_blk_quiet *after)
{
	return before->iostats && after->iostats && !before->inflight && !after->inflight && before->files &&
	       before->files == after->files && before->sig == after->sig;
}
