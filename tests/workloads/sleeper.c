/* Test workload: after SIGUSR1, sleeps exactly K times for M ms (clock_nanosleep, or -D in D state), prints "done MEDIAN_NS" (its own measure of a sleep), exits on SIGUSR1. */
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The parent waits for the child's exit in TASK_KILLABLE: one D-state switch out. */
static void __attribute__((noinline)) vfork_sleep(struct timespec *ts)
{
	if (vfork() == 0) {
		while (clock_nanosleep(CLOCK_MONOTONIC, 0, ts, ts))
			;
		_exit(0);
	}
}

static long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	long long *took;
	long k = 10, ms = 10, slack;
	int dstate = 0;
	sigset_t set;
	int opt, sig;

	while ((opt = getopt(argc, argv, "k:m:rD")) != -1) {
		switch (opt) {
		case 'k': k = atol(optarg); break;
		case 'm': ms = atol(optarg); break;
		case 'D': dstate = 1; break;
		case 'r': {
			/* SCHED_FIFO: back on the CPU as soon as the timer fires, whatever else runs */
			struct sched_param sp = { .sched_priority = 10 };

			if (sched_setscheduler(0, SCHED_FIFO, &sp)) {
				perror("sleeper: sched_setscheduler");
				return 1;
			}
			break;
		}
		default:
			fprintf(stderr, "usage: sleeper [-k sleeps] [-m ms] [-r]\n"
					"  prints 'pid tid timerslack_ns'; -r: SCHED_FIFO\n"
					"  -D: each sleep is a vfork whose child sleeps: the parent waits in D state\n");
			return 2;
		}
	}
	/* the slack the kernel may add to each sleep (RT tasks get none in recent kernels) */
	slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("%d %ld %ld\n", getpid(), (long)syscall(SYS_gettid), slack);
	fflush(stdout);
	took = calloc((size_t)(k > 0 ? k : 1), sizeof(*took));
	if (!took)
		return 1;
	sigwait(&set, &sig);
	for (long i = 0; i < k; i++) {
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
		long long t0 = now_ns();

		if (dstate) {
			vfork_sleep(&ts);
		} else {
			/* relative sleeps: each is one switch out in TASK_INTERRUPTIBLE */
			while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts))
				;
		}
		took[i] = now_ns() - t0;
	}
	/* the median of the sleeps as this process saw them: the reference for the tracer's p50
	 * (a loaded host or an emulated guest stretches every sleep past M ms) */
	qsort(took, (size_t)k, sizeof(*took), cmp_ll);
	/* stdout is a file: writing it does not block */
	printf("done %lld\n", k > 0 ? took[(k - 1) / 2] : 0LL);
	free(took);
	fflush(stdout);
	sigwait(&set, &sig);
	return 0;
}
