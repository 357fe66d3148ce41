/* Test workload of --heatmap: 1 ms sleeps for S1 seconds, then 20 ms sleeps for S2 seconds (two latency bands, one after the other); prints each sleep's measured ns and the switch time. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Sleeps @ms at a time until @until (monotonic ns); each sleep's length into @took; returns how many. */
static long phase(long ms, long long until, long long *took, long max)
{
	long n = 0;

	while (now_ns() < until && n < max) {
		struct timespec ts = { 0, ms * 1000000L };
		long long t0 = now_ns();

		/* one relative clock_nanosleep each: what the syscalls collector times */
		clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
		took[n++] = now_ns() - t0;
	}
	return n;
}

int main(int argc, char **argv)
{
	long long start, sw, *a, *b;
	double s1, s2;
	long na, nb, max = 100000;

	if (argc != 3 || (s1 = atof(argv[1])) <= 0 || (s2 = atof(argv[2])) <= 0) {
		fprintf(stderr, "usage: hm_phases S1 S2\n"
				"  1 ms sleeps for S1 seconds, then 20 ms sleeps for S2 seconds; then prints\n"
				"  's NS' for each 1 ms sleep, 'l NS' for each 20 ms one (as measured around the call)\n"
				"  and 'switch SECONDS' (since its start)\n");
		return 2;
	}
	a = calloc((size_t)max, sizeof(*a));
	b = calloc((size_t)max, sizeof(*b));
	if (!a || !b)
		return 1;
	start = now_ns();
	na = phase(1, start + (long long)(s1 * 1e9), a, max);
	sw = now_ns();
	nb = phase(20, sw + (long long)(s2 * 1e9), b, max);
	/* printed after the sleeps: writing must not sit between them */
	for (long i = 0; i < na; i++)
		printf("s %lld\n", a[i]);
	for (long i = 0; i < nb; i++)
		printf("l %lld\n", b[i]);
	printf("switch %.6f\n", (double)(sw - start) / 1e9);
	free(a);
	free(b);
	return 0;
}
