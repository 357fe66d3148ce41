/* The id -> path cache of cgroup v2 directories, filled by walking the mount and asking name_to_handle_at for each id. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core/cgroup.h"
#include "core/filter.h"

struct cg_entry {
	__u64 id;
	char *path; /* relative to the mount, "/" for the root */
};

/* One cache per process, used by every instance a driver runs (threads included): @lock guards all of it. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct cg_entry *cache;
static size_t ncache, capcache;
static double walked_at = -10.0;

/* cgroup trees are shallow; this bounds a walk of a pathological one */
#define CG_MAX_DEPTH 64

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int add(__u64 id, const char *rel)
{
	if (ncache == capcache) {
		size_t cap = capcache ? capcache * 2 : 64;
		struct cg_entry *n = realloc(cache, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		cache = n;
		capcache = cap;
	}
	cache[ncache].path = strdup(rel[0] ? rel : "/");
	if (!cache[ncache].path)
		return -ENOMEM;
	cache[ncache++].id = id;
	return 0;
}

/* @abs is the directory's full path, built in place; @rel points into it, past the mount. */
static int walk(char *abs, size_t abs_len, const char *rel, int depth)
{
	DIR *d;
	struct dirent *e;
	__u64 id;
	int err = 0;

	if (ks_cgroup_id(abs, &id) == 0) {
		err = add(id, rel);
		if (err)
			return err;
	}
	if (depth >= CG_MAX_DEPTH)
		return 0;
	d = opendir(abs);
	if (!d)
		return 0; /* removed meanwhile, or not readable: skip it */
	while (!err && (e = readdir(d))) {
		size_t n;

		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		n = strlen(e->d_name);
		if (abs_len + 1 + n >= PATH_MAX)
			continue;
		abs[abs_len] = '/';
		memcpy(abs + abs_len + 1, e->d_name, n + 1);
		err = walk(abs, abs_len + 1 + n, rel, depth + 1);
		abs[abs_len] = 0;
	}
	closedir(d);
	return err;
}

static void cache_drop(void)
{
	for (size_t i = 0; i < ncache; i++)
		free(cache[i].path);
	free(cache);
	cache = NULL;
	ncache = capcache = 0;
	walked_at = -10.0;
}

void ks_cgroup_cache_free(void)
{
	pthread_mutex_lock(&lock);
	cache_drop();
	pthread_mutex_unlock(&lock);
}

static int rewalk(void)
{
	const char *mnt = ks_cgroup2_mount();
	char abs[PATH_MAX];
	size_t len;

	if (!mnt)
		return -ENODEV;
	cache_drop();
	walked_at = mono_s();
	len = strlen(mnt);
	while (len > 1 && mnt[len - 1] == '/')
		len--;
	if (len >= sizeof(abs))
		return -ENAMETOOLONG;
	memcpy(abs, mnt, len);
	abs[len] = 0;
	return walk(abs, len, abs + len, 0);
}

static int lookup(__u64 id, char *buf, size_t len)
{
	for (int pass = 0; pass < 2; pass++) {
		int err;

		for (size_t i = 0; i < ncache; i++) {
			if (cache[i].id == id) {
				snprintf(buf, len, "%s", cache[i].path);
				return 0;
			}
		}
		if (pass || mono_s() - walked_at < 1.0)
			break;
		err = rewalk();
		if (err)
			return err;
	}
	return -ENOENT;
}

int ks_cgroup_path(__u64 id, char *buf, size_t len)
{
	int err;

	pthread_mutex_lock(&lock);
	err = lookup(id, buf, len);
	pthread_mutex_unlock(&lock);
	return err;
}
