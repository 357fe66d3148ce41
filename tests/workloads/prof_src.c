/* Test workload for pprof's addresses and lines: a hot loop in a function inlined into pp_hot, and reads of /dev/zero for kernel frames; built non-PIE with -g (see the Makefile), as go tool pprof -disasm reads ELF addresses as they are. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static char zeros[1 << 20];

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
	int fd = open("/dev/zero", O_RDONLY);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	printf("ready\n");
	fflush(stdout);
	do {
		sink = pp_hot(sink);
		/* some time in the kernel (clearing the buffer), so kernel frames are sampled too */
		if (fd >= 0 && read(fd, zeros, sizeof(zeros)) < 0)
			return 1;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	return 0;
}
