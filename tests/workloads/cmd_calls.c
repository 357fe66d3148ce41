/* Test workload of `-- CMD`: N getppid calls, a child and a grandchild that make M each, then SPIN_MS of spin (wall or CPU time) and exit STATUS; or "noise": getppid under another name until killed. */
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

static double now_ms(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	long n, m, spin;
	clockid_t cpu_clock;
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
		fprintf(stderr, "usage: cmd_calls N M STATUS [SPIN_MS [cpu]] | cmd_calls noise\n");
		return 2;
	}
	n = atol(argv[1]);
	m = atol(argv[2]);
	spin = argc > 4 ? atol(argv[4]) : 0;
	cpu_clock = argc > 5 && !strcmp(argv[5], "cpu") ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC;
	calls(n);
	if (m)
		family(m, 2);
	/* on-CPU time for the profiler, in this process only: SPIN_MS of wall time (record's
	 * intervals count it), or with "cpu" of CPU time, which a loaded machine does not shrink
	 * (beside two busy loops 400 ms of wall time gave 65 ms on CPU, 32 samples at 499 Hz) */
	for (double end = now_ms(cpu_clock) + (double)spin; now_ms(cpu_clock) < end;)
		for (int i = 0; i < 10000; i++)
			acc += (unsigned long)i * 7;
	/* the CPU time the process got: the profiler's reference */
	if (spin)
		fprintf(stderr, "cpu %.0f\n", now_ms(CLOCK_PROCESS_CPUTIME_ID) * 1e6);
	return atoi(argv[3]);
}
