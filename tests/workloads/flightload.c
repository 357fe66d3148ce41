/* Test workload for record --flight: after SIGUSR1, a raw getppid every INTERVAL us for TOTAL ms, with a close(-77) marker at each -m MS (and, with -l, one sleep of LONG ms there). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	long total = 3000, interval = 1000, marks[8], longms = 0;
	int nmarks = 0, next = 0, opt, sig;
	double t0;
	sigset_t set;

	while ((opt = getopt(argc, argv, "t:i:m:l:")) != -1) {
		switch (opt) {
		case 't': total = atol(optarg); break;
		case 'l': longms = atol(optarg); break;
		case 'i': interval = atol(optarg); break;
		case 'm':
			if (nmarks < 8)
				marks[nmarks++] = atol(optarg);
			break;
		default:
			fprintf(stderr, "usage: flightload [-t total_ms] [-i interval_us] [-l long_ms] [-m marker_ms]...\n");
			return 2;
		}
	}
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("%d ready\n", getpid());
	fflush(stdout);
	sigwait(&set, &sig);
	t0 = now_ms();
	for (;;) {
		double t = now_ms() - t0;

		if (t >= total)
			break;
		/* markers in the order given, each once, when its time has come */
		while (next < nmarks && t >= marks[next]) {
			close(-77);
			/* the one syscall of the run that lasts long: what --trigger-latency finds */
			if (longms)
				usleep((useconds_t)(longms * 1000));
			next++;
		}
		syscall(SYS_getppid);
		usleep((useconds_t)interval);
	}
	return 0;
}
