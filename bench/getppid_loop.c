/* Benchmark workload: repetitions of N raw getppid calls on one pinned CPU; prints median and min ns per call. */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_REPS 1000

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* A positive integer in [1, max], or -1: the whole string must be a number. */
static long parse_pos(const char *s, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 1 || v > max)
		return -1;
	return v;
}

static double now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double median(double *v, long n)
{
	qsort(v, (size_t)n, sizeof(v[0]), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * One repetition of @n calls: ns per call of wall time (CLOCK_MONOTONIC) in
 * *wall, and of this thread's CPU time in *cpu.  The CPU clock leaves out
 * the time other tasks held the CPU, which on a shared machine is most of
 * the noise; it still counts interrupts taken while the loop ran.
 */
static void one_rep(long n, double *wall, double *cpu)
{
	double c0 = now_ns(CLOCK_THREAD_CPUTIME_ID), t0 = now_ns(CLOCK_MONOTONIC);

	for (long i = 0; i < n; i++)
		syscall(SYS_getppid); /* the raw call: libc could cache or vDSO-ize it */
	*wall = (now_ns(CLOCK_MONOTONIC) - t0) / (double)n;
	*cpu = (now_ns(CLOCK_THREAD_CPUTIME_ID) - c0) / (double)n;
}

static void usage(void)
{
	fprintf(stderr, "usage: getppid_loop [-n CALLS_PER_REP] [-r REPS] [-c CPU] [-v]\n"
			"  runs one warm-up and REPS timed repetitions of CALLS_PER_REP getppid calls on CPU\n"
			"  (default: 200000 x 15 on the last CPU) and prints\n"
			"  'ns_per_call median=M min=m max=X cpu_median=CM cpu_min=Cm reps=R calls=N cpu=C'\n"
			"  (wall-clock ns per call; cpu_*: the thread's CPU time per call; calls counts the warm-up)\n");
}

int main(int argc, char **argv)
{
	long n = 200000, reps = 15, cpu = -1;
	double v[MAX_REPS], c[MAX_REPS], med, cmed;
	bool verbose = false;
	cpu_set_t set;
	int opt;

	while ((opt = getopt(argc, argv, "n:r:c:vh")) != -1) {
		switch (opt) {
		case 'n':
			n = parse_pos(optarg, LONG_MAX / 2);
			break;
		case 'r':
			reps = parse_pos(optarg, MAX_REPS);
			break;
		case 'c':
			cpu = strcmp(optarg, "0") ? parse_pos(optarg, CPU_SETSIZE - 1) : 0;
			break;
		case 'v':
			verbose = true;
			break;
		case 'h':
			usage();
			return 0;
		default:
			usage();
			return 2;
		}
		if (n < 0 || reps < 0 || cpu < -1 || (opt == 'c' && cpu < 0)) {
			fprintf(stderr, "getppid_loop: bad value '%s' for -%c\n", optarg, opt);
			return 2;
		}
	}
	if (optind < argc) {
		usage();
		return 2;
	}
	if (cpu < 0)
		cpu = sysconf(_SC_NPROCESSORS_ONLN) - 1;
	/* pinned, so a migration never lands inside a timed repetition */
	CPU_ZERO(&set);
	CPU_SET((int)cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		fprintf(stderr, "getppid_loop: cannot pin to cpu %ld: %s\n", cpu, strerror(errno));
		return 1;
	}
	one_rep(n, &v[0], &c[0]); /* warm-up: caches, branch predictors, the frequency governor */
	for (long r = 0; r < reps; r++) {
		one_rep(n, &v[r], &c[r]);
		if (verbose)
			fprintf(stderr, "rep %ld: %.1f ns/call wall, %.1f cpu\n", r, v[r], c[r]);
	}
	med = median(v, reps);
	cmed = median(c, reps);
	printf("ns_per_call median=%.1f min=%.1f max=%.1f cpu_median=%.1f cpu_min=%.1f reps=%ld calls=%ld cpu=%ld\n",
	       med, v[0], v[reps - 1], cmed, c[0], reps, n * (reps + 1), cpu);
	return 0;
}
