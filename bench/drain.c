/*
 * The shared row-map drain (ks_hash_drain_half) on its own: time per drain
 * of a hash of ROWS rows in the quiet half beside as many in the other,
 * batch operations against a key at a time, and a check of what a drain
 * leaves in the map.
 *
 *   drain [--rows N] [--rounds R] [--percpu] [--mode take|read|clear] [--only key|batch] [--check]
 *
 * Time: R rounds, each one drain by key and one in batches in alternating
 * order (the machine is shared and noisy), the quiet half filled again
 * before each (not timed); prints the median microseconds per drain of
 * each way and the median of the per-round ratios.  A quarter of the rows
 * are kept (zeroed in place), the rest deleted, as the collectors' busy and
 * idle rows.  The shared map is tcp's (struct ks_row_key-sized keys, a
 * ks_tcp_stat value, no preallocation); --percpu: mem's per-CPU faults.
 *
 * --check: for both ways and the three modes, the rows the drain hands
 * over and what it leaves (kept rows zeroed, others gone, the other half
 * untouched), a failing callback, and rows created in the other half by
 * a thread while the drain runs (none lost, the half drained once).
 * Exits 1 on a failed check.  Needs root (creates BPF maps).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "core/bpfutil.h"
#include "ksight/rowkey.h"
#include "ksight/tcp.h"

struct val {
	__u64 n; /* the row's count: its id + 1, 0 once zeroed */
	char rest[sizeof(struct ks_tcp_stat) - 8];
};

static int nrows = 1000, percpu, only = -1; /* only: --only key|batch, for perf */
static enum ks_drain_mode bmode = KS_DRAIN_TAKE;
static size_t vsz; /* one lookup's value: all CPUs' for --percpu */
static void *zero, *vbuf;

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static struct ks_row_key key_of(unsigned int gen, unsigned int id)
{
	struct ks_row_key k = { .gen = gen, .id = id };

	return k;
}

static int make_map(void)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = percpu ? 0 : BPF_F_NO_PREALLOC);
	int fd = bpf_map_create(percpu ? BPF_MAP_TYPE_PERCPU_HASH : BPF_MAP_TYPE_HASH, "drain_bench",
				sizeof(struct ks_row_key), percpu ? 8 : sizeof(struct val), 4 * nrows + 64, &o);

	if (fd < 0) {
		fprintf(stderr, "drain: cannot create a map: %s\n", strerror(errno));
		exit(1);
	}
	return fd;
}

/* Row @id of half @gen, valued id + 1 (on every CPU for --percpu). */
static void put(int fd, unsigned int gen, unsigned int id)
{
	struct ks_row_key k = key_of(gen, id);
	__u64 *v = calloc(1, vsz);

	if (!v)
		exit(1);
	if (percpu)
		for (int c = 0; c < ks_ncpus(); c++)
			v[c] = id + 1;
	else
		((struct val *)v)->n = id + 1;
	bpf_map_update_elem(fd, &k, v, BPF_ANY);
	free(v);
}

static __u64 value_n(const void *v);

/*
 * Half @gen full again: rows missing or zeroed written anew, the others
 * left (the programs update rows in place; a replaced element would be
 * freed after a grace period, inside the next timed drain).  Then the
 * frees of the drain before are waited out, for the same reason.
 */
static void fill(int fd, unsigned int gen)
{
	for (int i = 0; i < nrows; i++) {
		struct ks_row_key k = key_of(gen, (unsigned int)i);

		if (bpf_map_lookup_elem(fd, &k, vbuf) || value_n(vbuf) == 0)
			put(fd, gen, (unsigned int)i);
	}
	ks_sync_programs();
	ks_sync_programs();
}

static __u64 value_n(const void *v)
{
	__u64 s = 0;

	if (!percpu)
		return ((const struct val *)v)->n;
	for (int c = 0; c < ks_ncpus(); c++)
		s += ((const __u64 *)v)[c];
	return s;
}

struct arg {
	unsigned int gen;
	int rows, fail_at; /* rows handed over; the one whose callback fails (-1: none) */
	__u64 sum;
	unsigned char *seen; /* per id of the half: times handed over */
};

static bool in_half(const void *key, void *varg)
{
	return ((const struct ks_row_key *)key)->gen == ((struct arg *)varg)->gen;
}

static bool keep(const void *key, const void *value, void *varg)
{
	(void)value, (void)varg;
	return ((const struct ks_row_key *)key)->id % 4 == 0;
}

static int take(const void *key, const void *value, void *varg)
{
	struct arg *a = varg;
	unsigned int id = ((const struct ks_row_key *)key)->id;

	if (a->rows == a->fail_at) {
		a->rows++;
		return -EIO;
	}
	a->rows++;
	a->sum += value_n(value);
	if (a->seen && id < (unsigned int)(4 * nrows))
		a->seen[id]++;
	return 0;
}

static int drain(int fd, struct arg *a, enum ks_drain_mode mode)
{
	struct ks_hash_half h = { .fd = fd, .key_size = sizeof(struct ks_row_key), .match = in_half, .cb = take,
				  .keep = keep, .zero = zero, .arg = a, .value_buf = vbuf };

	return ks_hash_drain_half(&h, mode);
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_dbl);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int bench(int rounds)
{
	double *key = calloc((size_t)rounds, sizeof(double)), *bat = calloc((size_t)rounds, sizeof(double));
	double *ratio = calloc((size_t)rounds, sizeof(double));
	int fd = make_map();

	fill(fd, 0);
	for (int r = 0; r < rounds; r++) {
		for (int w = 0; w < 2; w++) {
			bool batch = only >= 0 ? only : (r + w) % 2; /* alternating which goes first */
			struct arg a = { .gen = 1, .fail_at = -1 };
			double t0;

			fill(fd, 1);
			ks_hash_drain_batch(batch);
			t0 = now_us();
			if (drain(fd, &a, bmode) || a.rows != (bmode == KS_DRAIN_CLEAR ? 0 : nrows)) {
				fprintf(stderr, "drain: a drain failed or handed %d rows over\n", a.rows);
				return 1;
			}
			(batch ? bat : key)[r] = now_us() - t0;
		}
		ratio[r] = bat[r] / key[r];
	}
	printf("%s: rows %d (+%d in the other half), %s map, %d rounds: by key %.0f us, batch %.0f us per drain (median), "
	       "batch/key %.3f (median ratio)\n",
	       bmode == KS_DRAIN_TAKE ? "take" : bmode == KS_DRAIN_READ ? "read" : "clear", nrows, nrows,
	       percpu ? "per-CPU" : "shared", rounds, median(key, rounds), median(bat, rounds),
	       median(ratio, rounds));
	return 0;
}

static int failed;

static void check(bool ok, const char *what, bool batch, const char *mode)
{
	printf("%s: %s (%s, %s)\n", ok ? "PASS" : "FAIL", what, batch ? "batch" : "by key", mode);
	failed |= !ok;
}

/* Rows of half @gen in the map, and their values' sum. */
static int count(int fd, unsigned int gen, __u64 *sum)
{
	struct ks_row_key k, *prev = NULL, next;
	int n = 0;

	*sum = 0;
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		k = next;
		prev = &k;
		if (next.gen != gen || bpf_map_lookup_elem(fd, &next, vbuf))
			continue;
		n++;
		*sum += value_n(vbuf);
	}
	return n;
}

static atomic_bool writing;
static atomic_int written;

/* The programs' part: rows of the other half (0) made one after another while the drain runs. */
static void *writer(void *varg)
{
	int fd = *(int *)varg;

	for (unsigned int id = (unsigned int)nrows; atomic_load(&writing) && id < 4u * nrows - 64; id++) {
		put(fd, 0, id);
		atomic_fetch_add(&written, 1);
	}
	return NULL;
}

static void check_way(bool batch)
{
	static const char *const names[] = { "take", "read", "clear" };
	const __u64 full = (__u64)nrows * (nrows + 1) / 2 * (percpu ? ks_ncpus() : 1);
	__u64 kept_ids = 0, sum;
	int nkept = (nrows + 3) / 4;

	for (int i = 0; i < nrows; i += 4)
		kept_ids += (__u64)i + 1;
	ks_hash_drain_batch(batch);
	for (int m = KS_DRAIN_TAKE; m <= KS_DRAIN_CLEAR; m++) {
		int fd = make_map();
		struct arg a = { .gen = 1, .fail_at = -1 };
		int err;

		fill(fd, 0);
		fill(fd, 1);
		err = drain(fd, &a, (enum ks_drain_mode)m);
		check(!err, "drain returns 0", batch, names[m]);
		check(a.rows == (m == KS_DRAIN_CLEAR ? 0 : nrows) && a.sum == (m == KS_DRAIN_CLEAR ? 0 : full),
		      "every row of the half handed over once, with its value", batch, names[m]);
		if (m == KS_DRAIN_READ) {
			check(count(fd, 1, &sum) == nrows && sum == full, "the half left as it was", batch, names[m]);
		} else {
			check(count(fd, 1, &sum) == nkept && sum == 0, "kept rows zeroed in place, the others deleted", batch,
			      names[m]);
		}
		check(count(fd, 0, &sum) == nrows && sum == full, "the other half untouched", batch, names[m]);
		close(fd);
	}
	/* a callback that fails: its row emptied, the drain stops with its error */
	{
		int fd = make_map();
		struct arg a = { .gen = 1, .fail_at = nrows / 2 };
		int left;

		fill(fd, 1);
		check(drain(fd, &a, KS_DRAIN_TAKE) == -EIO && a.rows == nrows / 2 + 1, "a failing callback stops the drain",
		      batch, "take");
		left = count(fd, 1, &sum);
		check(left >= nrows - a.rows && left <= nrows, "rows not handed over are left for the next drain", batch,
		      "take");
		close(fd);
	}
	/* rows made in the other half meanwhile: none lost, this half drained once */
	for (int round = 0; round < 5; round++) {
		int fd = make_map();
		unsigned char *seen = calloc(4 * (size_t)nrows, 1);
		struct arg a = { .gen = 1, .fail_at = -1, .seen = seen };
		pthread_t t;
		bool once = true;
		int in_other;

		fill(fd, 1);
		atomic_store(&writing, true);
		atomic_store(&written, 0);
		pthread_create(&t, NULL, writer, &fd);
		drain(fd, &a, KS_DRAIN_TAKE);
		atomic_store(&writing, false);
		pthread_join(t, NULL);
		for (int i = 0; i < nrows; i++)
			once &= seen[i] == 1;
		in_other = count(fd, 0, &sum);
		if (round == 4 || !once || in_other != atomic_load(&written)) {
			check(once && a.sum == full, "this half handed over once while the other grows", batch, "take");
			check(in_other == atomic_load(&written), "rows made in the other half meanwhile all there", batch,
			      "take");
			printf("# %d rows made in the other half during the drain\n", atomic_load(&written));
			round = 5;
		}
		free(seen);
		close(fd);
	}
}

int main(int argc, char **argv)
{
	int rounds = 9;
	bool do_check = false;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--rows") && i + 1 < argc)
			nrows = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--percpu"))
			percpu = 1;
		else if (!strcmp(argv[i], "--only") && i + 1 < argc)
			only = !strcmp(argv[++i], "batch");
		else if (!strcmp(argv[i], "--mode") && i + 1 < argc)
			i++, bmode = !strcmp(argv[i], "read") ? KS_DRAIN_READ : !strcmp(argv[i], "clear") ? KS_DRAIN_CLEAR : KS_DRAIN_TAKE;
		else if (!strcmp(argv[i], "--check"))
			do_check = true;
		else {
			fprintf(stderr, "usage: drain [--rows N] [--rounds R] [--percpu] [--mode take|read|clear] [--only key|batch] [--check]\n");
			return 2;
		}
	}
	if (nrows < 4 || rounds < 1) {
		fprintf(stderr, "drain: --rows 4 or more, --rounds 1 or more\n");
		return 2;
	}
	vsz = percpu ? 8 * (size_t)ks_ncpus() : sizeof(struct val);
	zero = calloc(1, vsz);
	vbuf = calloc(1, vsz);
	if (do_check) {
		check_way(false);
		check_way(true);
		return failed;
	}
	return bench(rounds);
}
