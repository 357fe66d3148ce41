/* libbpf-adjacent helpers shared by collectors. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "core/bpfutil.h"
#include "core/procfs.h"

/* The kernel's "operation not supported" for a map without batch operations (not in <errno.h>). */
#define ENOTSUPP_ 524

void ks_sync_programs(void)
{
	/* MEMBARRIER_CMD_GLOBAL is synchronize_rcu(); refused under nohz_full */
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) != 0) {
		struct timespec ts = { 0, 20 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
}

unsigned int ks_gen_mark(unsigned int *gen, volatile uint32_t *bss_gen)
{
	unsigned int old = *gen;

	*gen ^= 1;
	*bss_gen = *gen;
	return old;
}

unsigned int ks_gen_flip(unsigned int *gen, volatile uint32_t *bss_gen)
{
	unsigned int old = ks_gen_mark(gen, bss_gen);

	ks_sync_programs();
	return old;
}

int ks_map_add(int fd, const void *key, const void *value)
{
	for (int i = 0; i < 100; i++) {
		struct timespec ts = { 0, 100 * 1000 };

		if (!bpf_map_update_elem(fd, key, value, BPF_NOEXIST) || errno == EEXIST)
			return 0;
		if (errno != ENOMEM)
			return -errno;
		nanosleep(&ts, NULL);
	}
	return -ENOMEM;
}

static int ncpus;

static void ncpus_once(void)
{
	ncpus = libbpf_num_possible_cpus();
	if (ncpus < 1)
		ncpus = 1;
}

int ks_ncpus(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, ncpus_once);
	return ncpus;
}

uint32_t ks_pow2_at_least(uint64_t v, uint32_t cap)
{
	uint64_t p = 1;

	while (p < v && p < cap)
		p <<= 1;
	return (uint32_t)p;
}

uint64_t ks_pid_max(void)
{
	return ks_procfs_pid_max(NULL);
}

/* The drain a key at a time: where the kernel has no batch operations on hashes (before 5.6). */
static int drain_by_key(const struct ks_hash_half *h, enum ks_drain_mode mode)
{
	size_t key_size = h->key_size;
	char *keys = NULL, *cur = malloc(key_size), *next = malloc(key_size);
	size_t n = 0, cap = 0;
	const void *prev = NULL;
	int err = 0;

	if (!cur || !next) {
		err = -ENOMEM;
		goto out;
	}
	while (!bpf_map_get_next_key(h->fd, prev, next)) {
		if (!h->match || h->match(next, h->arg)) {
			if (n == cap) {
				size_t ncap = cap ? cap * 2 : 256;
				char *nk = realloc(keys, ncap * key_size);

				if (!nk) {
					err = -ENOMEM;
					goto out;
				}
				keys = nk;
				cap = ncap;
			}
			memcpy(keys + n++ * key_size, next, key_size);
		}
		memcpy(cur, next, key_size);
		prev = cur;
	}
	for (size_t i = 0; i < n && !err; i++) {
		const void *k = keys + i * key_size;

		if (bpf_map_lookup_elem(h->fd, k, h->value_buf))
			continue; /* deleted meanwhile */
		if (mode != KS_DRAIN_READ) {
			/* emptied before @cb sees the value: the buffer still holds it */
			/*
			 * A kept row that cannot be zeroed (a map without
			 * preallocation may lack an element for the swap) is
			 * deleted: left as it is, it would be counted again.
			 */
			if (!h->keep || !h->keep(k, h->value_buf, h->arg) ||
			    bpf_map_update_elem(h->fd, k, h->zero, BPF_EXIST))
				bpf_map_delete_elem(h->fd, k);
		}
		if (!err && mode != KS_DRAIN_CLEAR)
			err = h->cb(k, h->value_buf, h->arg);
	}
out:
	free(keys);
	free(cur);
	free(next);
	return err;
}

/*
 * Whether the kernel has batch operations on hashes (5.6+): decided by
 * the first drain's first batch read, for the process (0: not yet, 1: yes,
 * -1: no).  Every row map drained here is a (per-CPU) hash.
 */
static int hash_batch;

void ks_hash_drain_batch(bool on)
{
	__atomic_store_n(&hash_batch, on ? 1 : -1, __ATOMIC_RELAXED);
}

/* The size of one element's value as a lookup copies it (all CPUs' for a per-CPU map), and of its key. */
static int map_sizes(int fd, size_t *key_size, size_t *value_size)
{
	struct bpf_map_info info = { 0 };
	__u32 len = sizeof(info);
	size_t v;

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	v = info.value_size;
	if (info.type == BPF_MAP_TYPE_PERCPU_HASH || info.type == BPF_MAP_TYPE_LRU_PERCPU_HASH)
		v = ((v + 7) & ~(size_t)7) * (size_t)ks_ncpus();
	*key_size = info.key_size;
	*value_size = v;
	return 0;
}

/* Whether a batch operation failed only because the kernel has none for this map. */
static bool batch_unsupported(int err)
{
	return err == EINVAL || err == ENOTSUPP_ || err == EOPNOTSUPP;
}

/*
 * Zeroes the @n rows of @keys in place (@vals: as many copies of the zero
 * value), one batch update where it succeeds.  A row that cannot be
 * zeroed (a map without preallocation may lack an element for the swap)
 * is deleted, as a key at a time: left as it is, it would be counted
 * again.  The batch update takes no BPF_EXIST (only BPF_F_LOCK), and needs
 * none: the programs never delete rows, and this half is quiet.
 */
static void zero_rows(int fd, const char *keys, const char *vals, uint32_t n, size_t ksz, size_t vsz)
{
	uint32_t at = 0;

	while (at < n) {
		uint32_t cnt = n - at;

		if (!bpf_map_update_batch(fd, keys + at * ksz, vals + at * vsz, &cnt, NULL))
			return;
		/* cnt rows were zeroed before the one that failed */
		at += cnt;
		if (at >= n)
			return;
		if (bpf_map_update_elem(fd, keys + at * ksz, vals + at * vsz, BPF_EXIST))
			bpf_map_delete_elem(fd, keys + at * ksz);
		at++;
	}
}

void ks_map_delete_keys(int fd, const void *vkeys, uint32_t n, size_t ksz)
{
	const char *keys = vkeys;
	bool batch = __atomic_load_n(&hash_batch, __ATOMIC_RELAXED) >= 0;
	uint32_t at = 0;

	while (at < n) {
		uint32_t cnt = n - at;

		/* a key at a time where this process found no batch operations, or this map has none */
		if (!batch || (bpf_map_delete_batch(fd, keys + at * ksz, &cnt, NULL) && batch_unsupported(errno) && !cnt)) {
			for (; at < n; at++)
				bpf_map_delete_elem(fd, keys + at * ksz);
			return;
		}
		if (cnt == n - at)
			return;
		/* cnt deleted, then one failed (ENOENT: deleted meanwhile): on past it */
		at += cnt + 1;
	}
}

/*
 * One batch of rows read: those of the half are handed to @cb and
 * emptied, or only one of the two (@mode).  A row is emptied even when
 * @cb fails on it, and the rows after it are not touched, as a key at a
 * time did.  The values are all read before the zero values are written
 * over them.  0 or @cb's error.
 */
static int take_batch(const struct ks_hash_half *h, enum ks_drain_mode mode, char *keys, char *vals, uint32_t n,
		      size_t ksz, size_t vsz, char *del, char *kept)
{
	uint32_t ndel = 0, nkept = 0;
	int err = 0;

	for (uint32_t i = 0; i < n && !err; i++) {
		const char *k = keys + i * ksz, *v = vals + i * vsz;

		if (h->match && !h->match(k, h->arg))
			continue;
		if (mode != KS_DRAIN_READ) {
			if (h->keep && h->keep(k, v, h->arg))
				memcpy(kept + nkept++ * ksz, k, ksz);
			else
				memcpy(del + ndel++ * ksz, k, ksz);
		}
		if (mode != KS_DRAIN_CLEAR)
			err = h->cb(k, v, h->arg);
	}
	for (uint32_t i = 0; i < nkept; i++)
		memcpy(vals + i * vsz, h->zero, vsz);
	zero_rows(h->fd, kept, vals, nkept, ksz, vsz);
	ks_map_delete_keys(h->fd, del, ndel, ksz);
	return err;
}

/* What a batch holds at first: 64 KiB of rows, at least 8 (more when a bucket holds more). */
#define BATCH_BYTES (64 * 1024)

/*
 * The drain in batches (5.6+): the map read a batch of buckets at a time,
 * and the rows of the half in it emptied with one batch update (kept
 * rows) and one batch delete, where a key at a time made three system
 * calls a row and one more for each row of the other half.  A batch's
 * cursor is a bucket number, so rows deleted behind it do not move it
 * (get_next_key from a deleted key starts over at the first).  The rows
 * of the half are final: the programs write the other half since the
 * mark, and its grace period (ks_sync_programs) waited out those that
 * read the old index, so emptying after reading drops nothing.  Rows the
 * programs create meanwhile are the other half's, never emptied here.
 * -EOPNOTSUPP when the first read says the kernel has no batch operations
 * on this map, before anything changed.
 */
static int drain_batch(const struct ks_hash_half *h, enum ks_drain_mode mode)
{
	size_t ksz = 0, vsz = 0;
	uint32_t cap, batch;
	char *keys = NULL, *vals = NULL, *del = NULL, *kept = NULL;
	void *in = NULL;
	bool first = true, done = false;
	int err = map_sizes(h->fd, &ksz, &vsz);

	if (err)
		return err;
	if (ksz != h->key_size)
		return -EINVAL;
	cap = (uint32_t)(BATCH_BYTES / (ksz + vsz));
	if (cap < 8)
		cap = 8;
	while (!done && !err) {
		uint32_t n = cap;

		if (!keys) {
			keys = malloc(cap * ksz);
			vals = malloc(cap * vsz);
			del = malloc(cap * ksz);
			kept = malloc(cap * ksz);
			if (!keys || !vals || !del || !kept) {
				err = -ENOMEM;
				break;
			}
		}
		if (bpf_map_lookup_batch(h->fd, in, &batch, keys, vals, &n, NULL)) {
			if (errno == ENOSPC && !n && cap < (1u << 20)) {
				/* a bucket holds more than the batch: larger buffers, the same cursor */
				cap *= 2;
				free(keys), free(vals), free(del), free(kept);
				keys = vals = del = kept = NULL;
				continue;
			}
			if (first && batch_unsupported(errno)) {
				err = -EOPNOTSUPP;
				break;
			}
			if (errno != ENOENT) {
				err = -errno;
				break;
			}
			done = true; /* the last batch, n rows in it */
		}
		first = false;
		err = take_batch(h, mode, keys, vals, n, ksz, vsz, del, kept);
		in = &batch;
	}
	free(keys);
	free(vals);
	free(del);
	free(kept);
	return err;
}

int ks_hash_drain_half(const struct ks_hash_half *h, enum ks_drain_mode mode)
{
	int batch = __atomic_load_n(&hash_batch, __ATOMIC_RELAXED);

	if (batch >= 0) {
		int err = drain_batch(h, mode);

		if (err != -EOPNOTSUPP) {
			/* decided by a drain that went through, not one that failed for another reason */
			if (!batch && !err)
				__atomic_store_n(&hash_batch, 1, __ATOMIC_RELAXED);
			return err;
		}
		__atomic_store_n(&hash_batch, -1, __ATOMIC_RELAXED);
	}
	return drain_by_key(h, mode);
}

int ks_hash_drain(int fd, size_t key_size, bool (*match)(const void *key, void *arg),
		  int (*cb)(const void *key, const void *value, void *arg), void *arg, void *value_buf)
{
	struct ks_hash_half h = { .fd = fd, .key_size = key_size, .match = match, .cb = cb, .arg = arg,
				  .value_buf = value_buf };

	return ks_hash_drain_half(&h, KS_DRAIN_TAKE);
}

/*
 * PIDs from BPF are the initial namespace's: /proc names the same
 * processes only when ksight runs there too (PROC_PID_INIT_INO).
 */
static bool init_pidns;

static void pidns_once(void)
{
	char l[64];
	ssize_t n = readlink("/proc/self/ns/pid", l, sizeof(l) - 1);

	l[n > 0 ? n : 0] = 0;
	init_pidns = !strcmp(l, "pid:[4026531836]");
}

/* Once per process: several instances' drains label pids from their own threads. */
static bool in_init_pidns(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, pidns_once);
	return init_pidns;
}

/*
 * The name shown is the process's current one: a process that exec'd
 * since its row was made (bash -> the workload) is named by /proc while it
 * lives; the map's copy, taken when the row was made, names it after it
 * exited.
 */
static void pid_comm(int fd, uint32_t tgid, char *comm, bool take)
{
	char m[16] = { 0 };
	bool have_map = fd >= 0 && !bpf_map_lookup_elem(fd, &tgid, m);

	if (have_map && take)
		bpf_map_delete_elem(fd, &tgid);
	memset(comm, 0, 16);
	if (in_init_pidns() && !ks_procfs_comm(NULL, tgid, comm))
		return;
	if (have_map) {
		memcpy(comm, m, 15);
		return;
	}
	strcpy(comm, "?");
}

void ks_pid_comm_take(int fd, uint32_t tgid, char *comm)
{
	pid_comm(fd, tgid, comm, true);
}

void ks_pid_comm_peek(int fd, uint32_t tgid, char *comm)
{
	pid_comm(fd, tgid, comm, false);
}

void ks_pid_comm_seed(int fd, uint32_t tgid)
{
	char comm[16];

	pid_comm(-1, tgid, comm, false);
	if (strcmp(comm, "?"))
		bpf_map_update_elem(fd, &tgid, comm, BPF_NOEXIST);
}

/* Whether @n bytes at @p are all zero. */
static bool all_zero(const void *p, size_t n)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < n; i++)
		if (c[i])
			return false;
	return true;
}

int ks_array_drain(int fd, uint32_t first, uint32_t n, void *value_buf, size_t value_size,
		   int (*cb)(uint32_t idx, const void *value, void *arg), void *arg)
{
	return ks_array_drain_mode(fd, first, n, value_buf, value_size, cb, arg, KS_DRAIN_TAKE);
}

int ks_array_drain_mode(int fd, uint32_t first, uint32_t n, void *value_buf, size_t value_size,
			int (*cb)(uint32_t idx, const void *value, void *arg), void *arg, enum ks_drain_mode mode)
{
	for (uint32_t i = first; i < first + n; i++) {
		int took;

		if (bpf_map_lookup_elem(fd, &i, value_buf))
			return -errno;
		/* CLEAR reads nothing: whatever the element holds was counted by a READ (maybe another process's) */
		took = mode == KS_DRAIN_CLEAR ? !all_zero(value_buf, value_size) : cb(i, value_buf, arg);
		if (took < 0)
			return took;
		if (!took || mode == KS_DRAIN_READ)
			continue;
		/* the programs write the other half: nothing lands in between */
		memset(value_buf, 0, value_size);
		if (bpf_map_update_elem(fd, &i, value_buf, BPF_ANY))
			return -errno;
	}
	return 0;
}

int ks_cursor_get_u64(uint64_t *const *fields, int n, void **buf, size_t *len)
{
	uint64_t *v = malloc(sizeof(*v) * (size_t)(n + 1));

	if (!v)
		return -ENOMEM;
	v[0] = (uint64_t)n;
	for (int i = 0; i < n; i++)
		v[i + 1] = *fields[i];
	*buf = v;
	*len = sizeof(*v) * (size_t)(n + 1);
	return 0;
}

int ks_cursor_set_u64(uint64_t *const *fields, int n, const void *buf, size_t len)
{
	uint64_t v[16];

	if (n > 15 || len != sizeof(v[0]) * (size_t)(n + 1))
		return -EBADMSG;
	memcpy(v, buf, len);
	if (v[0] != (uint64_t)n)
		return -EBADMSG;
	for (int i = 0; i < n; i++)
		*fields[i] = v[i + 1];
	return 0;
}

/*
 * The kernel's BTF, for libbpf as well: this definition preempts libbpf's
 * own, which libbpf reaches through its PLT whenever it loads tp_btf or
 * fentry programs or relocates CO-RE reads.  libbpf 1.1 freads the 5 MiB
 * /sys/kernel/btf/vmlinux, which sysfs serves 4 KiB a read(), into one
 * buffer and copies it to another: 60% of `ksight syscalls` start-up here
 * (issue 11, start-up).  Linux 6.16+ lets the file be mapped, which leaves
 * one copy (btf__new's) and no reads.  Anywhere else, libbpf's own loader.
 */

/*
 * A block of @n bytes on the heap, its pages made present with one
 * madvise and freed again, for the next malloc of that size to reuse:
 * btf__new copies the 5 MiB into a fresh block, and a first touch of each
 * of its 1,340 pages is a page fault, ~10 us apiece in this VM (a third
 * of start-up).  The heap, not an mmap of glibc's own, so that the free
 * keeps the pages; the thresholds go back to glibc's defaults after.
 */
static void heap_prefault(size_t n)
{
	long pg = sysconf(_SC_PAGESIZE);
	char *p;

	mallopt(M_MMAP_THRESHOLD, (int)(n * 2));
	mallopt(M_TRIM_THRESHOLD, (int)(n * 4));
	p = malloc(n + (size_t)pg);
	if (p) {
		uintptr_t a = ((uintptr_t)p + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1);

#ifdef MADV_POPULATE_WRITE
		madvise((void *)a, n, MADV_POPULATE_WRITE);
#endif
		free(p);
	}
}

static void heap_prefault_end(void)
{
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	mallopt(M_TRIM_THRESHOLD, 128 * 1024);
}

struct btf *btf__load_vmlinux_btf(void)
{
	static const char path[] = "/sys/kernel/btf/vmlinux";
	struct btf *(*libbpf_own)(void);
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd >= 0 && !fstat(fd, &st) && st.st_size > 0) {
		void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);

		if (m != MAP_FAILED) {
			struct btf *btf;

			heap_prefault((size_t)st.st_size);
			btf = btf__new(m, (__u32)st.st_size);
			heap_prefault_end();
			munmap(m, (size_t)st.st_size);
			if (btf) {
				close(fd);
				return btf;
			}
		}
	}
	if (fd >= 0)
		close(fd);
	libbpf_own = (struct btf *(*)(void))dlsym(RTLD_NEXT, "btf__load_vmlinux_btf");
	if (!libbpf_own) {
		errno = ENOENT;
		return NULL;
	}
	return libbpf_own();
}

static struct btf *vmlinux_btf;
static int vmlinux_err;

static void kernel_btf_once(void)
{
	vmlinux_btf = btf__load_vmlinux_btf();
	vmlinux_err = vmlinux_btf ? 0 : errno;
}

struct btf *ks_kernel_btf(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	/* loaded by the first caller of any thread; the others wait for it */
	pthread_once(&once, kernel_btf_once);
	if (!vmlinux_btf)
		errno = vmlinux_err;
	return vmlinux_btf;
}

static const struct btf_type *drop_reasons; /* enum skb_drop_reason, or NULL */

static void drop_reasons_once(void)
{
	struct btf *vmlinux = ks_kernel_btf();
	int id = vmlinux ? btf__find_by_name_kind(vmlinux, "skb_drop_reason", BTF_KIND_ENUM) : -1;

	if (id > 0)
		drop_reasons = btf__type_by_id(vmlinux, id);
}

bool ks_drop_reasons_load(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, drop_reasons_once);
	return ks_kernel_btf() != NULL;
}

const char *ks_drop_reason_name(uint32_t code, char *buf, size_t len)
{
	static const char prefix[] = "SKB_DROP_REASON_";

	ks_drop_reasons_load();
	if (drop_reasons) {
		const struct btf_enum *e = btf_enum(drop_reasons);

		for (int i = 0; i < btf_vlen(drop_reasons); i++, e++) {
			const char *n = btf__name_by_offset(ks_kernel_btf(), e->name_off);

			if ((uint32_t)e->val != code || !n)
				continue;
			if (!strncmp(n, prefix, sizeof(prefix) - 1))
				n += sizeof(prefix) - 1;
			snprintf(buf, len, "%s", n);
			return buf;
		}
	}
	snprintf(buf, len, "%u", code);
	return buf;
}

int ks_tp_nargs(const char *tp)
{
	struct btf *vmlinux = ks_kernel_btf();
	const struct btf_type *t;
	char name[128];
	int id;

	if (!vmlinux)
		return -errno;
	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	id = btf__find_by_name_kind(vmlinux, name, BTF_KIND_TYPEDEF);
	if (id < 0)
		return id;
	/* typedef -> pointer -> prototype whose first argument is the hook's data */
	t = btf__type_by_id(vmlinux, btf__type_by_id(vmlinux, id)->type);
	if (!t || !btf_is_ptr(t))
		return -EINVAL;
	t = btf__type_by_id(vmlinux, t->type);
	if (!t || !btf_is_func_proto(t) || btf_vlen(t) < 1)
		return -EINVAL;
	return btf_vlen(t) - 1;
}

int ks_tp_arg_is_ptr(const char *tp, int idx)
{
	struct btf *vmlinux = ks_kernel_btf();
	const struct btf_type *t;
	const struct btf_param *p;
	char name[128];
	int id, n = ks_tp_nargs(tp);

	if (n < 0)
		return n;
	if (idx < 0 || idx >= n)
		return -EINVAL;
	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	id = btf__find_by_name_kind(vmlinux, name, BTF_KIND_TYPEDEF);
	t = btf__type_by_id(vmlinux, btf__type_by_id(vmlinux, btf__type_by_id(vmlinux, id)->type)->type);
	p = btf_params(t) + idx + 1;
	id = btf__resolve_type(vmlinux, p->type);
	if (id < 0)
		return id;
	return btf_is_ptr(btf__type_by_id(vmlinux, id));
}

int ks_btf_has_member(const char *type, const char *member)
{
	struct btf *vmlinux = ks_kernel_btf();
	const struct btf_type *t;
	const struct btf_member *m;
	int id;

	if (!vmlinux)
		return -errno;
	id = btf__find_by_name_kind(vmlinux, type, BTF_KIND_STRUCT);
	if (id < 0)
		return id;
	t = btf__type_by_id(vmlinux, id);
	m = btf_members(t);
	for (int i = 0; i < btf_vlen(t); i++, m++) {
		const char *n = btf__name_by_offset(vmlinux, m->name_off);

		if (n && !strcmp(n, member))
			return 1;
	}
	return 0;
}

/* The kernel's values (uapi linux/bpf.h of 6.6+; the installed headers are older) */
#define KS_BPF_TRACE_UPROBE_MULTI 48
#define KS_BPF_F_UPROBE_MULTI_RETURN 1u

/* BPF_LINK_CREATE's attributes with the uprobe_multi member of Linux 6.6 */
struct ks_link_create_umulti {
	uint32_t prog_fd;
	uint32_t target_fd;
	uint32_t attach_type;
	uint32_t flags;
	uint64_t path;
	uint64_t offsets;
	uint64_t ref_ctr_offsets;
	uint64_t cookies;
	uint32_t cnt;
	uint32_t umulti_flags;
	uint32_t pid;
	uint32_t pad;
};

int ks_uprobe_multi_link(int prog_fd, const char *path, const uint64_t *offsets, const uint64_t *cookies,
			 uint32_t cnt, bool ret, int pid)
{
	struct ks_link_create_umulti a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.prog_fd = (uint32_t)prog_fd;
	a.attach_type = KS_BPF_TRACE_UPROBE_MULTI;
	a.path = (uint64_t)(uintptr_t)path;
	a.offsets = (uint64_t)(uintptr_t)offsets;
	a.cookies = (uint64_t)(uintptr_t)cookies;
	a.cnt = cnt;
	a.umulti_flags = ret ? KS_BPF_F_UPROBE_MULTI_RETURN : 0;
	a.pid = pid > 0 ? (uint32_t)pid : 0;
	fd = (int)syscall(__NR_bpf, BPF_LINK_CREATE, &a, sizeof(a));
	return fd < 0 ? -errno : fd;
}

int ks_uprobe_multi_prepare(struct bpf_program *p)
{
	return bpf_program__set_expected_attach_type(p, (enum bpf_attach_type)KS_BPF_TRACE_UPROBE_MULTI);
}
