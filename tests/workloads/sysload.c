/* Test workload: after SIGUSR1, exactly N getppid and M failing close(-1) calls, optionally K more on a second thread. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static long n_getppid, n_close, n_thread;
static pthread_barrier_t ready, go;
static long tid2;

static void burst(long n)
{
	for (long i = 0; i < n; i++)
		syscall(SYS_getppid); /* not the libc wrapper: no caching, one syscall each */
}

static void *thread_main(void *arg)
{
	(void)arg;
	tid2 = syscall(SYS_gettid);
	pthread_barrier_wait(&ready);
	pthread_barrier_wait(&go);
	burst(n_thread);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th;
	sigset_t set;
	int opt, sig;

	while ((opt = getopt(argc, argv, "n:e:T:c:")) != -1) {
		switch (opt) {
		case 'n': n_getppid = atol(optarg); break;
		case 'e': n_close = atol(optarg); break;
		case 'T': n_thread = atol(optarg); break;
		case 'c': prctl(PR_SET_NAME, optarg, 0, 0, 0); break;
		default:
			fprintf(stderr, "usage: sysload [-n getppid] [-e bad_close] [-T thread_getppid] [-c comm]\n");
			return 2;
		}
	}
	/* blocked everywhere before the thread exists, so only sigwait sees it */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	pthread_barrier_init(&ready, NULL, 2);
	pthread_barrier_init(&go, NULL, 2);
	if (n_thread) {
		pthread_create(&th, NULL, thread_main, NULL);
		pthread_barrier_wait(&ready);
	}
	/* pid, main tid, second tid: the test reads this line, then signals */
	printf("%d %ld %ld\n", getpid(), (long)syscall(SYS_gettid), tid2);
	fflush(stdout);
	sigwait(&set, &sig);
	if (n_thread)
		pthread_barrier_wait(&go);
	burst(n_getppid);
	for (long i = 0; i < n_close; i++)
		close(-1);
	if (n_thread)
		pthread_join(th, NULL);
	return 0;
}
