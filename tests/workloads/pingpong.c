/* Test and bench workload: two threads pinned to one CPU pass a byte over two pipes exactly N times each way. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long rounds = 100000;
static int cpu = -1, cpu_b = -1;
static bool batch;
static int to_b[2], to_a[2];
static long tid_b;
static pthread_barrier_t ready;

static void die(const char *what)
{
	fprintf(stderr, "pingpong: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Pins the calling thread to @c; with -b also makes it SCHED_BATCH, which a wakeup never preempts. */
static void pin(int c)
{
	struct sched_param sp = { 0 };
	cpu_set_t set;

	if (batch && sched_setscheduler(0, SCHED_BATCH, &sp))
		die("sched_setscheduler");
	if (c < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(c, &set);
	/* per thread: both must share the one CPU for a same-CPU ping-pong */
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity");
}

/* The echo side: answers every byte until the pipe closes. */
static void *thread_b(void *arg)
{
	char c;

	(void)arg;
	tid_b = syscall(SYS_gettid);
	pin(cpu_b >= 0 ? cpu_b : cpu);
	pthread_barrier_wait(&ready);
	while (read(to_b[0], &c, 1) == 1)
		if (write(to_a[1], &c, 1) != 1)
			die("write");
	return NULL;
}

static double ts_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	bool gated = false;
	pthread_t th;
	sigset_t set;
	double t0, t1, c0, c1;
	char c = 'x';
	int opt, sig;

	while ((opt = getopt(argc, argv, "n:c:x:gb")) != -1) {
		switch (opt) {
		case 'n': rounds = atol(optarg); break;
		case 'c': cpu = atoi(optarg); break;
		case 'g': gated = true; break;
		case 'b': batch = true; break;
		case 'x': cpu_b = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: pingpong [-n rounds] [-c cpu] [-x cpu_of_b] [-g] [-b]\n"
					"  -c: pin both threads to cpu, -x: pin the echo thread elsewhere\n"
					"  -b: SCHED_BATCH, so every round trip is two wakeups and two blocking switches\n"
					"  -g: print 'pid tid_a tid_b', run on SIGUSR1, print 'done WALL_NS CPU_NS', exit on SIGUSR1\n");
			return 2;
		}
	}
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (pipe(to_b) || pipe(to_a))
		die("pipe");
	pin(cpu);
	pthread_barrier_init(&ready, NULL, 2);
	if (pthread_create(&th, NULL, thread_b, NULL))
		die("pthread_create");
	pthread_barrier_wait(&ready);
	if (gated) {
		printf("%d %ld %ld\n", getpid(), (long)syscall(SYS_gettid), tid_b);
		fflush(stdout);
		sigwait(&set, &sig);
	}
	/* CPU time of both threads as well: other tasks on the CPU stretch the
	 * wall time, not the time this process itself spends */
	c0 = ts_ns(CLOCK_PROCESS_CPUTIME_ID);
	t0 = ts_ns(CLOCK_MONOTONIC);
	for (long i = 0; i < rounds; i++) {
		if (write(to_b[1], &c, 1) != 1)
			die("write");
		if (read(to_a[0], &c, 1) != 1)
			die("read");
	}
	t1 = ts_ns(CLOCK_MONOTONIC);
	c1 = ts_ns(CLOCK_PROCESS_CPUTIME_ID);
	/* wall and CPU ns per round trip: two wakeups and two context switches */
	if (!rounds)
		rounds = 1;
	printf("%s%.1f %.1f\n", gated ? "done " : "", (t1 - t0) / (double)rounds, (c1 - c0) / (double)rounds);
	fflush(stdout);
	if (gated)
		sigwait(&set, &sig); /* both threads stay blocked until the test has read /proc */
	close(to_b[1]);
	pthread_join(th, NULL);
	return 0;
}
