/* Test workload of `ksight wall`: after SIGUSR1, threads whose wall-time split is known by construction; each prints its own measures, then "done"; exits on SIGUSR1. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "gate.h"

#define MS 1000000LL

static long long clock_ns(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static long long now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

static void sleep_ns(long long ns)
{
	struct timespec ts = { ns / 1000000000LL, ns % 1000000000LL };

	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts))
		;
}

/* A thread's record: its name, start (set by its creator), and what it measured of its own state (ns). */
struct thr {
	const char *name;
	void *(*fn)(struct thr *);
	int cpu;      /* >= 0: pinned there */
	int fifo;     /* SCHED_FIFO, so a busy host does not stretch its sleeps */
	long long start, own;
	pthread_t id;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int pipefd[2];
static long long spin_ms = 1000;

/* Prints "thr NAME TID LIFE_NS CPU_NS RUNQ_NS OWN_NS": CPU and run-queue time from schedstat fields 1 and 2. */
static void report(struct thr *t)
{
	long long cpu = -1, rq = -1, life;
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%ld/schedstat", (long)syscall(SYS_gettid));
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%lld %lld", &cpu, &rq) != 2)
			cpu = rq = -1;
		fclose(f);
	}
	life = now_ns() - t->start;
	printf("thr %s %ld %lld %lld %lld %lld\n", t->name, (long)syscall(SYS_gettid), life, cpu, rq, t->own);
	fflush(stdout);
}

/* 100 periods of 3 ms on the CPU (its own CPU time) and 7 ms in nanosleep; own: the time asleep */
static void *spin30(struct thr *t)
{
	for (int i = 0; i < 100; i++) {
		long long c = clock_ns(CLOCK_THREAD_CPUTIME_ID), s;

		while (clock_ns(CLOCK_THREAD_CPUTIME_ID) - c < 3 * MS)
			;
		s = now_ns();
		sleep_ns(7 * MS);
		t->own += now_ns() - s;
	}
	return NULL;
}

/* Holds the mutex 20 ms of every 30, asleep */
static void *holder(struct thr *t)
{
	(void)t;
	for (int i = 0; i < 30; i++) {
		pthread_mutex_lock(&mu);
		sleep_ns(20 * MS);
		pthread_mutex_unlock(&mu);
		sleep_ns(10 * MS);
	}
	return NULL;
}

/* Takes the mutex 5 ms into each of the holder's periods: waits ~15 ms, then sleeps 15; own: the time in pthread_mutex_lock */
static void *waiter(struct thr *t)
{
	sleep_ns(5 * MS);
	for (int i = 0; i < 29; i++) {
		long long s = now_ns();

		pthread_mutex_lock(&mu);
		t->own += now_ns() - s;
		pthread_mutex_unlock(&mu);
		sleep_ns(15 * MS);
	}
	return NULL;
}

/* Writes a byte every 10 ms, 100 times, then closes */
static void *feeder(struct thr *t)
{
	(void)t;
	for (int i = 0; i < 100; i++) {
		sleep_ns(10 * MS);
		if (write(pipefd[1], "x", 1) != 1)
			break;
	}
	close(pipefd[1]);
	return NULL;
}

/* Reads the pipe to its end; own: the time in read */
static void *reader(struct thr *t)
{
	char c;

	for (;;) {
		long long s = now_ns();
		ssize_t n = read(pipefd[0], &c, 1);

		t->own += now_ns() - s;
		if (n <= 0)
			break;
	}
	return NULL;
}

/* One nanosleep of a second: no scheduler event in the windows between its two ends */
static void *nap(struct thr *t)
{
	long long s = now_ns();

	sleep_ns(1000 * MS);
	t->own = now_ns() - s;
	return NULL;
}

/* -D PATH: O_DIRECT 4 KiB reads of PATH (a block device) for spin_ms of wall time; own: the time in pread */
static const char *dio_path;
static void *dio(struct thr *t)
{
	long long end = t->start + spin_ms * MS;
	void *buf;
	int fd = open(dio_path, O_RDONLY | O_DIRECT);

	if (fd < 0 || posix_memalign(&buf, 4096, 4096))
		return NULL;
	for (long long off = 0; now_ns() < end; off = (off + 4096) % (4 << 20)) {
		long long s = now_ns();

		if (pread(fd, buf, 4096, off) != 4096)
			break;
		t->own += now_ns() - s;
	}
	free(buf);
	close(fd);
	return NULL;
}

/* Spins spin_ms of wall time */
static void *spinner(struct thr *t)
{
	long long end = t->start + spin_ms * MS;

	while (now_ns() < end)
		;
	return NULL;
}

static void *run(void *arg)
{
	struct thr *t = arg;

	pthread_setname_np(pthread_self(), t->name);
	if (t->cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(t->cpu, &set);
		sched_setaffinity(0, sizeof(set), &set);
	}
	t->fn(t);
	report(t);
	return NULL;
}

/*
 * Starts @t; SCHED_FIFO from its birth where asked and allowed, so that
 * neither its first run nor its wakeups wait behind the host's other work.
 */
static int start(struct thr *t)
{
	struct sched_param p = { .sched_priority = 10 };
	pthread_attr_t a;
	int err;

	if (!t->fifo)
		return pthread_create(&t->id, NULL, run, t);
	pthread_attr_init(&a);
	pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&a, SCHED_FIFO);
	pthread_attr_setschedparam(&a, &p);
	err = pthread_create(&t->id, &a, run, t);
	pthread_attr_destroy(&a);
	if (err == EPERM) /* not allowed: the sleeps may stretch, the split stays */
		err = pthread_create(&t->id, NULL, run, t);
	return err;
}

int main(int argc, char **argv)
{
	struct thr mix[] = {
		{ .name = "wm-spin30", .fn = spin30, .cpu = -1, .fifo = 1 },
		{ .name = "wm-holder", .fn = holder, .cpu = -1, .fifo = 1 },
		{ .name = "wm-waiter", .fn = waiter, .cpu = -1, .fifo = 1 },
		{ .name = "wm-feeder", .fn = feeder, .cpu = -1, .fifo = 1 },
		{ .name = "wm-reader", .fn = reader, .cpu = -1, .fifo = 1 },
		{ .name = "wm-pin-a", .fn = spinner, .cpu = 1, .fifo = 0 },
		{ .name = "wm-pin-b", .fn = spinner, .cpu = 1, .fifo = 0 },
		{ .name = "wm-nap", .fn = nap, .cpu = -1, .fifo = 1 },
	};
	/* -T MS: one thread spinning MS ms of wall time (in a CPU-quota cgroup, for its throttled time);
	 * -D MS DEV: one thread reading DEV with O_DIRECT for MS ms */
	struct thr thr[] = { { .name = "wm-throttled", .fn = spinner, .cpu = -1, .fifo = 0 } };
	struct thr *t = mix;
	int n = sizeof(mix) / sizeof(mix[0]);

	if (argc == 3 && !strcmp(argv[1], "-T")) {
		spin_ms = atoll(argv[2]);
		t = thr;
		n = 1;
	} else if (argc == 4 && !strcmp(argv[1], "-D")) {
		spin_ms = atoll(argv[2]);
		dio_path = argv[3];
		thr[0].name = "wm-dio";
		thr[0].fn = dio;
		t = thr;
		n = 1;
	} else if (argc != 1) {
		fprintf(stderr, "usage: wallmix [-T MS | -D MS BLOCKDEV]\n");
		return 2;
	}
	if (pipe(pipefd))
		return 1;
	gate_open_as("ready %d\n");
	/* a thread's life starts here, before the clone that wakes it first: as the kernel sees it */
	for (int i = 0; i < n && (t[i].start = now_ns()); i++)
		if (start(&t[i]))
			return 1;
	for (int i = 0; i < n; i++)
		pthread_join(t[i].id, NULL);
	printf("done\n");
	fflush(stdout);
	gate_wait();
	return 0;
}
