/* Test workload of serve: after SIGUSR1, K sleeps of which every Jth is LONG ms and the rest SHORT ms; prints each sleep's measured ns. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "gate.h"

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long k, every, shortms, longms;
	long long *took;

	if (argc != 5 || (k = atol(argv[1])) < 1 || (every = atol(argv[2])) < 1 || (shortms = atol(argv[3])) < 0 ||
	    (longms = atol(argv[4])) < 0) {
		fprintf(stderr, "usage: sleeplog K EVERY SHORT_MS LONG_MS\n"
				"  prints its pid, waits for SIGUSR1, sleeps, prints each sleep's ns, then 'done'\n");
		return 2;
	}
	took = calloc((size_t)k, sizeof(*took));
	if (!took)
		return 1;
	gate_open();
	for (long i = 0; i < k; i++) {
		long ms = (i % every == every - 1) ? longms : shortms;
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
		long long t0 = now_ns();

		/* one relative clock_nanosleep each: what the syscalls collector times, from entry to return */
		clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
		took[i] = now_ns() - t0;
	}
	/* printed after the sleeps: writing must not sit between them */
	for (long i = 0; i < k; i++)
		printf("%lld\n", took[i]);
	printf("done\n");
	fflush(stdout);
	free(took);
	return 0;
}
