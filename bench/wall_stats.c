/* Holds BPF run-time statistics on (BPF_ENABLE_STATS: counted, so a kernel.bpf_stats_enabled set by another stays as it was), says "enabled", until SIGINT or SIGTERM. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(void)
{
	int fd;

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (fd < 0) {
		fprintf(stderr, "wall_stats: cannot enable BPF statistics: %s\n", strerror(-fd));
		return 1;
	}
	fprintf(stderr, "enabled\n");
	while (!stop)
		pause();
	close(fd);
	return 0;
}
