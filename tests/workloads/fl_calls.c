/* Test workload for `ksight funclat`: calls fl_sleep exactly N times (each sleeps SLEEP_US, or 1/4 to 2x of it with "vary"), fires a USDT probe N times, and times its own calls. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sdt.h>
#include <time.h>
#include <unistd.h>

static sigset_t gate;
/* SIGTERM: the loop ends at the call it was in and says how far it got (a test that gave up waiting) */
static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* The function funclat times: noinline and used, so it is a real call with its own symbol. */
__attribute__((noinline, used)) int fl_sleep(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	__asm__ volatile("" ::: "memory");
	return nanosleep(&ts, NULL);
}

/* Two more for the globs (fl_* matches three functions), called a known number of times each. */
__attribute__((noinline, used)) int fl_tiny_a(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

__attribute__((noinline, used)) int fl_tiny_b(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * 2;
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100, us = argc > 2 ? atol(argv[2]) : 1000;
	long long *took = calloc(n > 0 ? n : 1, sizeof(*took));
	int sig, acc = 0, vary = argc > 3;

	if (!took || n <= 0)
		return 1;
	/* "fl_calls N 0 tight": N back-to-back calls of fl_tiny_a, no gate, the ns per call (bench/profile.sh) */
	if (argc > 3 && !strcmp(argv[3], "tight")) {
		long long t0 = now_ns();

		for (long i = 0; i < n; i++)
			acc += fl_tiny_a((int)i);
		printf("tight %.1f %d\n", (double)(now_ns() - t0) / (double)n, acc & 1);
		free(took);
		return 0;
	}
	sigemptyset(&gate);
	sigaddset(&gate, SIGUSR1);
	sigprocmask(SIG_BLOCK, &gate, NULL);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	sigwait(&gate, &sig);
	/* no SA_RESTART: the signal cuts the sleep short */
	sigaction(SIGTERM, &(struct sigaction){ .sa_handler = on_term }, NULL);
	for (long i = 0; i < n; i++) {
		if (stop) {
			printf("stopped %ld of %ld\n", i, n);
			free(took);
			return 1;
		}
		long long t0 = now_ns();

		/* vary: eight lengths, a distribution with some width to compare */
		fl_sleep(vary ? us * (1 + i % 8) / 4 : us);
		took[i] = now_ns() - t0;
		DTRACE_PROBE1(ksight_test, tick, i);
		acc += fl_tiny_a((int)i);
		if (i % 2 == 0)
			acc += fl_tiny_b((int)i);
	}
	qsort(took, n, sizeof(*took), cmp_ll);
	/* the median by nearest rank, as ksight's p50 */
	printf("done %ld %lld %d\n", n, took[(n + 1) / 2 - 1], acc & 1);
	fflush(stdout);
	/* the end waits for the test too: the process is still there for ksight to drain */
	sigwait(&gate, &sig);
	free(took);
	return 0;
}
