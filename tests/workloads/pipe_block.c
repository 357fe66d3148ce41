/* Test workload for `ksight offcpu --stacks`: a thread blocks in read() on a pipe K times, timing each read itself. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int fds[2], k = 20;
static long long blocked_ns;

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* The function the off-CPU stack must show between the thread's start and libc's read. */
__attribute__((noinline)) int wait_for_byte(void)
{
	char c;
	long long t0 = now_ns();
	int r = (int)read(fds[0], &c, 1);

	blocked_ns += now_ns() - t0;
	return r;
}

static void *reader(void *arg)
{
	(void)arg;
	printf("ready %d %ld\n", (int)getpid(), (long)syscall(SYS_gettid));
	fflush(stdout);
	/* the first read waits for the gate: not timed (ksight may attach during it) */
	if (wait_for_byte() != 1)
		return NULL;
	blocked_ns = 0;
	for (int i = 0; i < k; i++)
		if (wait_for_byte() != 1)
			break;
	return NULL;
}

/* argv[1]: K reads (default 20), argv[2]: ms between writes (default 20). SIGUSR1 starts the writes. */
int main(int argc, char **argv)
{
	int ms = argc > 2 ? atoi(argv[2]) : 20, sig;
	pthread_t th;
	sigset_t set;

	if (argc > 1)
		k = atoi(argv[1]);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (pipe(fds) || pthread_create(&th, NULL, reader, NULL))
		return 1;
	sigwait(&set, &sig);
	for (int i = 0; i <= k; i++) {
		struct timespec d = { 0, ms * 1000000l };

		nanosleep(&d, NULL);
		if (write(fds[1], "x", 1) != 1)
			return 1;
	}
	pthread_join(th, NULL);
	printf("done %lld\n", blocked_ns);
	return 0;
}
