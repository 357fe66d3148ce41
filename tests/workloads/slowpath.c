/* Test workload for diff: requests for -t SEC (or -n of them), each a few fast syscalls and a sleep (-c: a spin), the slow path (-f per mille of them, seeded) -x times longer. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static volatile unsigned long sink;

/*
 * -c: the request's work on the CPU, a loop of its own in each path (no call
 * out, so a profile's leaf frame names the path); about 1000 rounds a
 * microsecond, counted rather than timed so -x 2 is exactly twice the work;
 * noipa: two identical bodies would otherwise be folded into one function
 */
static void __attribute__((noipa)) fast_path(long us)
{
	for (long i = 0; i < us * 1000; i++)
		sink += (unsigned long)i;
}

static void __attribute__((noipa)) slow_path(long us)
{
	for (long i = 0; i < us * 1000; i++)
		sink += (unsigned long)i;
}

/* xorshift64*: the same request mix on every run for one seed, whatever libc's rand does */
static unsigned long long rng = 88172645463325252ull;

static unsigned long long next(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 2685821657736338717ull;
}

int main(int argc, char **argv)
{
	double secs = 1, mult = 1, t0;
	long fast_us = 100, slow_us = 400, permille = 200, work = 4, n = 0, slow = 0, max_n = 0;
	int o, cpu = 0;

	while ((o = getopt(argc, argv, "t:n:F:S:f:x:w:s:c")) != -1) {
		switch (o) {
		case 't': secs = atof(optarg); break;
		case 'n': max_n = atol(optarg); break;
		case 'F': fast_us = atol(optarg); break;
		case 'S': slow_us = atol(optarg); break;
		case 'f': permille = atol(optarg); break;
		case 'x': mult = atof(optarg); break;
		case 'w': work = atol(optarg); break;
		case 's': rng = strtoull(optarg, NULL, 0) | 1; break;
		case 'c': cpu = 1; break;
		default:
			fprintf(stderr, "usage: slowpath [-t SEC | -n REQUESTS] [-F FAST_US] [-S SLOW_US] [-f PERMILLE] [-x MULT] [-w CALLS] [-s SEED] [-c]\n");
			return 2;
		}
	}
	t0 = now_s();
	/* -n: a fixed amount of work, however long a loaded machine takes to do it */
	while (max_n ? n < max_n : now_s() - t0 < secs) {
		long us = fast_us;
		int is_slow = 0;
		struct timespec ts;

		/* the request's own work: cheap syscalls */
		for (long i = 0; i < work; i++)
			getppid();
		if ((long)(next() % 1000) < permille) {
			us = (long)((double)slow_us * mult);
			slow++;
			is_slow = 1;
		}
		n++;
		if (cpu) {
			if (is_slow)
				slow_path(us);
			else
				fast_path(us);
			continue;
		}
		ts.tv_sec = us / 1000000;
		ts.tv_nsec = us % 1000000 * 1000;
		clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
	}
	printf("requests %ld slow %ld\n", n, slow);
	return 0;
}
