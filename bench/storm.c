/* Benchmark workload: a getppid storm of T threads at a set total rate (or flat out) for D seconds, started by a byte on stdin; prints calls made and ns per call. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 64

struct worker {
	pthread_t th;
	double rate; /* calls per second for this thread, 0: flat out */
	double secs;
	long calls;
	double cpu_ns;
};

static double now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/*
 * Paced by the clock (vDSO: no system call of its own), checked every 16
 * calls; a thread that falls behind catches up at full speed, so the total
 * is the rate asked for unless the machine cannot make it.
 */
static void *work(void *arg)
{
	struct worker *w = arg;
	double t0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_THREAD_CPUTIME_ID), end = t0 + w->secs * 1e9, t;
	long n = 0;

	while ((t = now_ns(CLOCK_MONOTONIC)) < end) {
		if (w->rate > 0 && (double)n >= (t - t0) * w->rate / 1e9)
			continue;
		for (int i = 0; i < 16; i++)
			syscall(SYS_getppid); /* the raw call: libc could cache it */
		n += 16;
	}
	w->calls = n;
	w->cpu_ns = now_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
	return NULL;
}

static double parse_num(const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || v < 0)
		return -1;
	return v;
}

int main(int argc, char **argv)
{
	double rate = 0, secs = 1;
	struct worker w[MAX_THREADS];
	long threads = 2, total = 0;
	double cpu = 0;
	char c;
	int opt;

	while ((opt = getopt(argc, argv, "t:r:d:")) != -1) {
		double v = parse_num(optarg);

		if (v < 0 || (opt == 't' && (v < 1 || v > MAX_THREADS)) || (opt == 'd' && v <= 0)) {
			fprintf(stderr, "storm: bad value '%s' for -%c\n", optarg, opt);
			return 2;
		}
		if (opt == 't')
			threads = (long)v;
		else if (opt == 'r')
			rate = v;
		else if (opt == 'd')
			secs = v;
		else {
			fprintf(stderr, "usage: storm [-t THREADS] [-r CALLS_PER_S (0: flat out)] [-d SECS] <START\n");
			return 2;
		}
	}
	/* the start signal: a byte (or end of file) on stdin, once the tracer is attached */
	if (read(0, &c, 1) < 0) {
		fprintf(stderr, "storm: reading stdin: %s\n", strerror(errno));
		return 1;
	}
	for (long i = 0; i < threads; i++) {
		w[i] = (struct worker){ .rate = rate / (double)threads, .secs = secs };
		if (pthread_create(&w[i].th, NULL, work, &w[i])) {
			fprintf(stderr, "storm: cannot start a thread\n");
			return 1;
		}
	}
	for (long i = 0; i < threads; i++) {
		pthread_join(w[i].th, NULL);
		total += w[i].calls;
		cpu += w[i].cpu_ns;
	}
	printf("calls=%ld cpu_ns_per_call=%.1f rate=%.0f\n", total, total ? cpu / (double)total : 0, (double)total / secs);
	return 0;
}
