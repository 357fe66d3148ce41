/* Test workload of the syscalls collector: after SIGUSR1, N forks, S handled signals and R rounds of new-name bursts on two threads. */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static long rounds;
static char prefix[8] = "scb";
static pthread_barrier_t bar;

static void on_usr2(int sig)
{
	(void)sig;
}

/*
 * One burst thread: every round both threads take the round's fresh name
 * (a new row in `--by comm`, made by two CPUs at once), make 5 getppid
 * calls under it, and take a common name again before the barrier, so the
 * fresh row holds exactly 2 x (prctl + 5 getppid) calls: each call is
 * counted at its return, under the name the thread has then.
 */
static void *burster(void *arg)
{
	long cpu = (long)arg;
	char name[32];
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET((int)cpu, &set);
	sched_setaffinity(0, sizeof(set), &set); /* may fail on one CPU: then both share it */
	for (long r = 0; r < rounds; r++) {
		pthread_barrier_wait(&bar);
		snprintf(name, sizeof(name), "%s%ld", prefix, r % 100000000);
		prctl(PR_SET_NAME, name, 0, 0, 0);
		for (int i = 0; i < 5; i++)
			syscall(SYS_getppid);
		prctl(PR_SET_NAME, "scidle", 0, 0, 0);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long forks = 0, sigs = 0;
	sigset_t gate;
	int opt, sig;

	while ((opt = getopt(argc, argv, "f:s:b:p:")) != -1) {
		switch (opt) {
		case 'f': forks = atol(optarg); break;
		case 's': sigs = atol(optarg); break;
		case 'b': rounds = atol(optarg); break;
		case 'p': snprintf(prefix, sizeof(prefix), "%s", optarg); break;
		default:
			fprintf(stderr, "usage: sc_calls [-f forks] [-s signals] [-b burst_rounds] [-p name_prefix]\n");
			return 2;
		}
	}
	signal(SIGUSR2, on_usr2); /* a handler: each signal ends in one rt_sigreturn */
	/* g_start waits for a line of two words: the pid twice (no second thread yet) */
	sigemptyset(&gate);
	sigaddset(&gate, SIGUSR1);
	sigprocmask(SIG_BLOCK, &gate, NULL);
	printf("%d %d\n", getpid(), getpid());
	fflush(stdout);
	sigwait(&gate, &sig);
	for (long i = 0; i < forks; i++) {
		pid_t p = fork();

		if (p == 0)
			_exit(0); /* one exit_group per child */
		waitpid(p, NULL, 0);
	}
	for (long i = 0; i < sigs; i++)
		kill(getpid(), SIGUSR2);
	if (rounds) {
		pthread_t th[2];
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

		pthread_barrier_init(&bar, NULL, 2);
		for (long t = 0; t < 2; t++)
			pthread_create(&th[t], NULL, burster, (void *)(t % (ncpu > 1 ? 2 : 1)));
		for (long t = 0; t < 2; t++)
			pthread_join(th[t], NULL);
	}
	return 0;
}
