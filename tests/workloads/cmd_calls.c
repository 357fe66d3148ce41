/* Test workload of `-- CMD`: N getppid calls, a child and a grandchild that make M each, then SPIN_MS of CPU and exit STATUS; or "noise": getppid under another name until killed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void calls(long n)
{
	for (long i = 0; i < n; i++)
		syscall(SYS_getppid);
}

/* @n calls in a forked child, which first forks a grandchild that makes @n too: both levels are followed */
static void family(long n, int depth)
{
	pid_t p = fork();

	if (p < 0) {
		perror("fork");
		exit(1);
	}
	if (p == 0) {
		if (depth > 1)
			family(n, depth - 1);
		calls(n);
		_exit(0);
	}
	waitpid(p, NULL, 0);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	long n, m, spin;
	volatile unsigned long acc = 0;

	/* the calls of another process beside the command, which the trace must leave out */
	if (argc == 2 && !strcmp(argv[1], "noise")) {
		prctl(PR_SET_NAME, "cmd_noise", 0, 0, 0);
		for (;;) {
			calls(10);
			usleep(1000);
		}
	}
	if (argc < 4) {
		fprintf(stderr, "usage: cmd_calls N M STATUS [SPIN_MS] | cmd_calls noise\n");
		return 2;
	}
	n = atol(argv[1]);
	m = atol(argv[2]);
	spin = argc > 4 ? atol(argv[4]) : 0;
	calls(n);
	if (m)
		family(m, 2);
	/* on-CPU time for the profiler, in this process only */
	for (double end = now_ms() + (double)spin; now_ms() < end;)
		for (int i = 0; i < 10000; i++)
			acc += (unsigned long)i * 7;
	return atoi(argv[3]);
}
