/* Test workload for pprof's addresses and lines: a hot loop in a function inlined into pp_hot; built non-PIE with -g (see the Makefile), as go tool pprof -disasm reads ELF addresses as they are. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

/* always inlined: its line is one of pp_hot's location's two (inlined frame, then the call site) */
static inline __attribute__((always_inline)) unsigned long pp_mix(unsigned long x)
{
	for (int i = 0; i < 100000; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull; /* PP_MIX_LINE */
	return x;
}

__attribute__((noinline)) unsigned long pp_hot(unsigned long x)
{
	return pp_mix(x) ^ (x >> 7); /* PP_CALL_LINE */
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 5;
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	printf("ready\n");
	fflush(stdout);
	do {
		sink = pp_hot(sink);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	return 0;
}
