/* Test workload: one spinning thread per nice value given, all pinned to one CPU, for a fixed time. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_HOGS 8

static int cpu;
static double seconds = 2.0;
static pthread_barrier_t ready, go;
static bool gated;

struct hog {
	pthread_t th;
	int nice;
	long tid;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *spin(void *arg)
{
	struct hog *h = arg;
	cpu_set_t set;
	double end;
	volatile unsigned long n = 0;

	h->tid = syscall(SYS_gettid);
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	/* nice is per thread on Linux: setpriority on the tid */
	if (sched_setaffinity(0, sizeof(set), &set) || setpriority(PRIO_PROCESS, (id_t)h->tid, h->nice)) {
		fprintf(stderr, "cpuhog: cannot pin or renice thread: %s\n", strerror(errno));
		exit(1);
	}
	pthread_barrier_wait(&ready);
	if (gated)
		pthread_barrier_wait(&go);
	end = now_s() + seconds;
	while (now_s() < end)
		n++;
	return NULL;
}

int main(int argc, char **argv)
{
	struct hog hogs[MAX_HOGS];
	int opt, n = 0;

	sigset_t set;
	int sig;

	while ((opt = getopt(argc, argv, "c:s:g")) != -1) {
		switch (opt) {
		case 'g': gated = true; break;
		case 'c': cpu = atoi(optarg); break;
		case 's': seconds = atof(optarg); break;
		default:
			goto usage;
		}
	}
	for (int i = optind; i < argc && n < MAX_HOGS; i++)
		hogs[n++].nice = atoi(argv[i]);
	if (!n)
		goto usage;
	pthread_barrier_init(&ready, NULL, (unsigned)n + 1);
	pthread_barrier_init(&go, NULL, (unsigned)n + 1);
	/* SIGUSR1 is the start signal under -g: blocked in every thread, taken by sigwait */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	for (int i = 0; i < n; i++)
		pthread_create(&hogs[i].th, NULL, spin, &hogs[i]);
	pthread_barrier_wait(&ready);
	/* pid, then each thread's tid and nice */
	printf("%d", getpid());
	for (int i = 0; i < n; i++)
		printf(" %ld:%d", hogs[i].tid, hogs[i].nice);
	printf("\n");
	fflush(stdout);
	if (gated) {
		sigwait(&set, &sig);
		pthread_barrier_wait(&go);
	}
	for (int i = 0; i < n; i++)
		pthread_join(hogs[i].th, NULL);
	return 0;
usage:
	fprintf(stderr, "usage: cpuhog [-c cpu] [-s seconds] [-g] NICE...\n"
			"  -g: print the ids, then spin from SIGUSR1 on\n");
	return 2;
}
