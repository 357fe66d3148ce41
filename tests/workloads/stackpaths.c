/* Test workload of the stack modes: after SIGUSR1, N getppid calls, the i-th from its own call path (i's low D bits choose p0 or p1 at each level), P calls per millisecond. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int depth = 12;

static void p0(unsigned long path, int level);
static void p1(unsigned long path, int level);

/*
 * The call: libc's syscall() sets up no frame, so a frame-pointer walk from
 * it skips its caller's return address: that is this function's, not a p0
 * or p1 of the path.
 */
static __attribute__((noinline, noclone)) void leaf(void)
{
	syscall(SYS_getppid); /* not the libc wrapper: one syscall each */
	__asm__ volatile("" ::: "memory");
}

/* At each level the next bit of @path picks the callee: 2^depth distinct user stacks, each named by its frames. */
static __attribute__((noinline, noclone)) void step(unsigned long path, int level)
{
	if (level == depth) {
		leaf();
		return;
	}
	if (path & 1)
		p1(path >> 1, level + 1);
	else
		p0(path >> 1, level + 1);
	__asm__ volatile("" ::: "memory"); /* no tail call: each level keeps its frame */
}

static __attribute__((noinline, noclone)) void p0(unsigned long path, int level)
{
	step(path, level);
	__asm__ volatile("" ::: "memory");
}

/* not p0's code: the compiler would fold the two into one function, one name */
static __attribute__((noinline, noclone)) void p1(unsigned long path, int level)
{
	step(path, level);
	__asm__ volatile("nop" ::: "memory");
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 4096, per_ms = argc > 3 ? atol(argv[3]) : 2;
	struct timespec ms = { 0, 1000 * 1000 };
	sigset_t set;
	int sig;

	if (argc > 2)
		depth = atoi(argv[2]);
	if (n < 0 || depth < 1 || depth > 60 || per_ms < 1) {
		fprintf(stderr, "usage: stackpaths [N [DEPTH [PER_MS]]]\n");
		return 2;
	}
	/* the start gate, with a line of two fields for the test's g_start: pid and N */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("%d %ld\n", getpid(), n);
	fflush(stdout);
	sigwait(&set, &sig);
	for (long i = 0; i < n; i++) {
		step((unsigned long)i, 0);
		if ((i + 1) % per_ms == 0)
			nanosleep(&ms, NULL);
	}
	printf("done %ld\n", n);
	return 0;
}
