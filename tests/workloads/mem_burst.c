/* Test workload: two threads pinned to two CPUs take a fresh shared name each round and fault pages under it (a burst of new rows). */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>
#include "gate.h"

static long rounds = 1000, pages = 5, psz;
static pthread_barrier_t bar;
static const char *prefix = "mb";

static void *worker(void *arg)
{
	long cpu = (long)arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET((int)cpu, &set);
	/* best effort: on one CPU the rows still come in a burst */
	sched_setaffinity(0, sizeof(set), &set);
	for (long r = 0; r < rounds; r++) {
		char name[64];
		char *p;

		snprintf(name, sizeof(name), "%.8s%ld", prefix, r % 1000000);
		pthread_barrier_wait(&bar);
		prctl(PR_SET_NAME, name, 0, 0, 0);
		/* both threads make the row of this name at once, from their own CPUs */
		p = mmap(NULL, (size_t)(pages * psz), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			exit(1);
		for (long i = 0; i < pages; i++)
			p[i * psz] = 1;
		munmap(p, (size_t)(pages * psz));
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[2];
	int opt, gate = 0;

	psz = sysconf(_SC_PAGESIZE);
	while ((opt = getopt(argc, argv, "r:n:p:g")) != -1) {
		switch (opt) {
		case 'r': rounds = atol(optarg); break;
		case 'n': pages = atol(optarg); break;
		case 'p': prefix = optarg; break;
		case 'g': gate = 1; break;
		default:
			fprintf(stderr, "usage: mem_burst [-r rounds] [-n pages] [-p name_prefix] [-g]\n"
					"  each round both threads rename to PREFIX<round> and touch N new pages\n");
			return 2;
		}
	}
	if (gate)
		gate_open();
	pthread_barrier_init(&bar, NULL, 2);
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("done\n");
	fflush(stdout);
	if (gate)
		gate_wait();
	return 0;
}
