/* Test workload for `ksight profile`: a known hot function (hot_spin) reached only through libc's qsort comparison callback. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define N 64

static volatile sig_atomic_t stop;
static volatile unsigned long sink;

static void on_alarm(int sig)
{
	(void)sig;
	stop = 1;
}

/* The busy function every comparison calls: most samples should land here. */
__attribute__((noinline)) unsigned long hot_spin(int a, int b)
{
	unsigned long x = (unsigned long)(a ^ b);

	for (int i = 0; i < 4000; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

/* A little work outside the comparisons, so the profile has a second, smaller peak. */
__attribute__((noinline)) unsigned long cold_spin(void)
{
	unsigned long x = 1;

	for (int i = 0; i < 20000; i++)
		x = x * 2862933555777941757ull + 3037000493ull;
	return x;
}

/* qsort's callback: the result of hot_spin is used after it returns, so the call is never a tail call. */
static int cmp(const void *pa, const void *pb)
{
	int a = *(const int *)pa, b = *(const int *)pb;

	sink += hot_spin(a, b);
	return (a > b) - (a < b);
}

/*
 * argv[1]: seconds to run (default 10); argv[2] "-g": print "ready PID" and
 * wait for SIGUSR1 before starting (without: print it and start).  At the
 * end prints "cpu NS", the CPU time the process used.
 */
int main(int argc, char **argv)
{
	int v[N], secs = argc > 1 ? atoi(argv[1]) : 10, sig;
	struct timespec cpu;
	sigset_t set;

	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	if (argc > 2 && !strcmp(argv[2], "-g")) {
		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		sigprocmask(SIG_BLOCK, &set, NULL);
		sigwait(&set, &sig);
	}
	signal(SIGALRM, on_alarm);
	alarm(secs > 0 ? secs : 10);
	srand(1);
	while (!stop) {
		for (int i = 0; i < N; i++)
			v[i] = rand();
		qsort(v, N, sizeof(v[0]), cmp);
		sink += cold_spin();
	}
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
	printf("cpu %lld\n", cpu.tv_sec * 1000000000ll + cpu.tv_nsec);
	return 0;
}
