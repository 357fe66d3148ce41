/* Test workload: after SIGUSR1, sleeps exactly K times for M ms (clock_nanosleep, or -D in D state), prints "done MEDIAN_NS" (its own measure of a sleep), exits on SIGUSR1 (or at once with -x). */
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

/* Spins on the CPU for @ms: no switch out of its own */
static void busy(long ms)
{
	long long end = now_ns() + ms * 1000000LL;

	while (now_ns() < end)
		;
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	long long *took;
	long k = 10, ms = 10, before = 0, after = 0, slack;
	int dstate = 0, leave = 0;
	sigset_t set;
	int opt, sig;

	while ((opt = getopt(argc, argv, "k:m:rDb:a:xn:")) != -1) {
		switch (opt) {
		case 'k': k = atol(optarg); break;
		case 'm': ms = atol(optarg); break;
		case 'D': dstate = 1; break;
		case 'b': before = atol(optarg); break;
		case 'a': after = atol(optarg); break;
		case 'x': leave = 1; break;
		case 'n': prctl(PR_SET_NAME, optarg, 0, 0, 0); break;
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
			fprintf(stderr, "usage: sleeper [-k sleeps] [-m ms] [-r] [-D] [-b ms] [-a ms] [-x] [-n name]\n"
					"  prints 'pid tid timerslack_ns'; -r: SCHED_FIFO\n"
					"  -D: each sleep is a vfork whose child sleeps: the parent waits in D state\n"
					"  -b MS, -a MS: spin on the CPU for MS ms before, after the sleeps\n"
					"  -x: exit after 'done' instead of waiting for SIGUSR1 (a -p run ends with it)\n"
					"  -n NAME: run under this command name (a --comm filter for several at once)\n");
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
	busy(before);
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
	busy(after);
	qsort(took, (size_t)k, sizeof(*took), cmp_ll);
	/* stdout is a file: writing it does not block */
	printf("done %lld\n", k > 0 ? took[(k - 1) / 2] : 0LL);
	free(took);
	fflush(stdout);
	if (!leave)
		sigwait(&set, &sig);
	return 0;
}
