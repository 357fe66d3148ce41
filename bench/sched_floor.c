/* Loads bench/sched_floor.bpf.c, says "attached" on stderr, and keeps it attached until SIGINT or SIGTERM. */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
#include "sched_floor.skel.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(void)
{
	struct ks_sched_floor *s;

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	s = ks_sched_floor__open_and_load();
	if (!s || ks_sched_floor__attach(s)) {
		fprintf(stderr, "sched_floor: cannot load or attach\n");
		ks_sched_floor__destroy(s);
		return 1;
	}
	fprintf(stderr, "attached\n");
	while (!stop)
		pause();
	ks_sched_floor__destroy(s);
	return 0;
}
