/* Test workload for biolat's flush accounting: N synchronous 4 KiB writes, O_DIRECT|O_DSYNC (as dd oflag=direct,dsync) or buffered, each followed by fsync. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>
#include "gate.h"

static void usage(void)
{
	fprintf(stderr, "usage: bl_syncload -n writes [-f] [-c comm] [-g] PATH\n"
			"  default: O_DIRECT|O_DSYNC writes of 4 KiB (FUA writes) over the first 64 blocks of PATH\n"
			"  -f  buffered 4 KiB writes, each followed by fsync (PATH is created)\n"
			"  -g  print the pid, then wait for SIGUSR1 before any I/O\n");
	exit(2);
}

int main(int argc, char **argv)
{
	long n = -1;
	int opt, fd, gate = 0, fs = 0;
	void *buf;

	while ((opt = getopt(argc, argv, "n:fc:g")) != -1) {
		switch (opt) {
		case 'n': n = atol(optarg); break;
		case 'f': fs = 1; break;
		case 'c': prctl(PR_SET_NAME, optarg, 0, 0, 0); break;
		case 'g': gate = 1; break;
		default: usage();
		}
	}
	if (optind != argc - 1 || n < 0)
		usage();
	if (posix_memalign(&buf, 4096, 4096)) {
		fprintf(stderr, "bl_syncload: out of memory\n");
		return 1;
	}
	memset(buf, 0x5a, 4096);
	fd = fs ? open(argv[optind], O_RDWR | O_CREAT, 0600) : open(argv[optind], O_RDWR | O_DIRECT | O_DSYNC);
	if (fd < 0) {
		fprintf(stderr, "bl_syncload: cannot open '%s': %s\n", argv[optind], strerror(errno));
		return 1;
	}
	if (gate)
		gate_open();
	for (long i = 0; i < n; i++) {
		if (pwrite(fd, buf, 4096, (off_t)(i % 64) * 4096) != 4096) {
			fprintf(stderr, "bl_syncload: write %ld: %s\n", i, strerror(errno));
			return 1;
		}
		if (fs && fsync(fd)) {
			fprintf(stderr, "bl_syncload: fsync: %s\n", strerror(errno));
			return 1;
		}
	}
	close(fd);
	free(buf);
	return 0;
}
