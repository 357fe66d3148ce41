/* Workload for profile stacks through signal frames: a SIGPROF handler takes most of the CPU time, interrupting a loop, all without frame pointers. */
/*
 * Usage: prof_signal SECONDS
 * Prints "ready PID", waits for SIGUSR1, then spins SECONDS in main ->
 * spin_outer -> spin_loop while an ITIMER_PROF timer (every 1 ms of CPU)
 * raises SIGPROF, whose handler on_prof runs sig_hot (a few ms of work: the timer ticks every 4 ms at HZ 250):
 * most samples are main -> spin_outer -> spin_loop -> (signal frame) ->
 * on_prof -> sig_hot.  Prints "cpu NS" (its CPU time) and the signals
 * handled at the end.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include "gate.h"

static uint64_t now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static volatile uint64_t sink;
static volatile sig_atomic_t handled, stop;

/* the handler's work, no calls of its own */
__attribute__((noinline)) void sig_hot(void)
{
	uint64_t x = sink;

	for (int i = 0; i < 2000000; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink = x;
}

/* the count after the call keeps the handler's frame (no tail call) */
__attribute__((noinline)) void on_prof(int sig)
{
	(void)sig;
	sig_hot();
	handled++;
}

/* the interrupted code: a loop with no calls, so the signal lands in it */
__attribute__((noinline)) uint64_t spin_loop(uint64_t end_ns)
{
	uint64_t x = 1, n = 0;

	while (!stop) {
		for (int i = 0; i < 100000; i++)
			x = x * 2862933555777941757ull + 3037000493ull;
		if ((++n & 15) == 0 && now_ns(CLOCK_MONOTONIC) >= end_ns)
			break;
	}
	return x;
}

__attribute__((noinline)) void spin_outer(uint64_t end_ns)
{
	sink += spin_loop(end_ns);
	handled += 0;
}

int main(int argc, char **argv)
{
	struct itimerval it = { { 0, 1000 }, { 0, 1000 } }, off = { { 0, 0 }, { 0, 0 } };
	struct sigaction sa = { 0 };
	uint64_t c0, end_ns;

	if (argc != 2) {
		fprintf(stderr, "usage: prof_signal SECONDS\n");
		return 2;
	}
	sa.sa_handler = on_prof;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGPROF, &sa, NULL))
		return 1;
	gate_open_as("ready %d\n");
	/*
	 * The end is known before the timer starts: a first signal landing in
	 * atof (strtod) made 5-7% of the samples in the slow 6.1 guest, whose
	 * first handler ran long there, stacks outside the loop.
	 */
	end_ns = now_ns(CLOCK_MONOTONIC) + (uint64_t)(atof(argv[1]) * 1e9);
	c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	if (setitimer(ITIMER_PROF, &it, NULL))
		return 1;
	spin_outer(end_ns);
	setitimer(ITIMER_PROF, &off, NULL);
	printf("cpu %llu\n", (unsigned long long)(now_ns(CLOCK_PROCESS_CPUTIME_ID) - c0));
	printf("signals %d\n", (int)handled);
	return 0;
}
