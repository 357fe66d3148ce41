/* Test workload of `ksight top`: takes the name NAME (hostile bytes allowed), then at each SIGUSR1 makes exactly N getppid calls and waits again. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/*
 * Usage: top_calls NAME N.  Each round is one rt_sigtimedwait that returns
 * (sigwait) and N getppid: N + 1 system calls returned, all within
 * microseconds of the signal, so a round falls in one window of top's.
 */
int main(int argc, char **argv)
{
	sigset_t set;
	long n;
	int sig;

	if (argc != 3) {
		fprintf(stderr, "usage: top_calls NAME N\n");
		return 2;
	}
	n = strtol(argv[2], NULL, 10);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	prctl(PR_SET_NAME, argv[1]);
	printf("%d ready\n", getpid());
	fflush(stdout);
	for (;;) {
		sigwait(&set, &sig);
		for (long i = 0; i < n; i++)
			syscall(SYS_getppid);
	}
}
