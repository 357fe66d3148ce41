/* Test workload: after SIGUSR1, sleeps exactly K times for M ms (clock_nanosleep), prints "done", exits on SIGUSR1. */
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long k = 10, ms = 10, slack;
	sigset_t set;
	int opt, sig;

	while ((opt = getopt(argc, argv, "k:m:r")) != -1) {
		switch (opt) {
		case 'k': k = atol(optarg); break;
		case 'm': ms = atol(optarg); break;
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
					"  prints 'pid tid timerslack_ns'; -r: SCHED_FIFO\n");
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
	sigwait(&set, &sig);
	for (long i = 0; i < k; i++) {
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

		/* relative sleeps: each is one switch out in TASK_INTERRUPTIBLE */
		while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts))
			;
	}
	/* stdout is a file: writing it does not block */
	printf("done\n");
	fflush(stdout);
	sigwait(&set, &sig);
	return 0;
}
