/* The start gate of the test workloads: print the pid, then wait for SIGUSR1 (and again at the end when asked). */
#ifndef KS_WORKLOAD_GATE_H
#define KS_WORKLOAD_GATE_H

#include <signal.h>
#include <stdio.h>
#include <unistd.h>

static sigset_t gate_set;

/* Waits for the next SIGUSR1; gate_open must have run. */
static void gate_wait(void)
{
	int sig;

	sigwait(&gate_set, &sig);
}

/*
 * Blocks SIGUSR1 so only sigwait sees it, prints the pid for the test by
 * @fmt (a line with one %d: the profile tests wait for "ready PID"), waits
 * for its signal.
 */
static void gate_open_as(const char *fmt)
{
	sigemptyset(&gate_set);
	sigaddset(&gate_set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &gate_set, NULL);
	printf(fmt, getpid());
	fflush(stdout);
	gate_wait();
}

static inline void gate_open(void)
{
	gate_open_as("%d\n");
}

#endif
