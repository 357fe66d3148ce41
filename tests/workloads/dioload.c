/* Test and bench workload: exactly N O_DIRECT block writes, an fsync, then exactly M O_DIRECT block reads, timed. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "gate.h"

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void usage(void)
{
	fprintf(stderr, "usage: dioload [-w writes] [-r reads] [-b block_bytes] [-s blocks_in_area] [-c comm] [-g] [-t] PATH\n"
			"  -g  print the pid, then wait for SIGUSR1 before any I/O\n"
			"  -t  print the mean ns per read on stdout\n");
	exit(2);
}

int main(int argc, char **argv)
{
	long nw = 0, nr = 0, bs = 4096, area = 0;
	int opt, fd, gate = 0, timed = 0;
	double t0, t1;
	void *buf;

	while ((opt = getopt(argc, argv, "w:r:b:s:c:gt")) != -1) {
		switch (opt) {
		case 'w': nw = atol(optarg); break;
		case 'r': nr = atol(optarg); break;
		case 'b': bs = atol(optarg); break;
		case 's': area = atol(optarg); break;
		case 'c': prctl(PR_SET_NAME, optarg, 0, 0, 0); break;
		case 'g': gate = 1; break;
		case 't': timed = 1; break;
		default: usage();
		}
	}
	if (optind != argc - 1 || bs <= 0 || bs % 512 || nw < 0 || nr < 0)
		usage();
	/* reads and writes cycle over the first @area blocks (all of them by default) */
	if (!area)
		area = nw > nr ? nw : nr;
	if (!area)
		area = 1;
	if (posix_memalign(&buf, 4096, (size_t)bs)) {
		fprintf(stderr, "dioload: out of memory\n");
		return 1;
	}
	memset(buf, 0xa5, (size_t)bs);
	/* read-only when there is nothing to write: closing a block device opened
	 * for writing makes udev probe it, with reads of its own */
	fd = open(argv[optind], (nw ? O_RDWR : O_RDONLY) | O_DIRECT);
	if (fd < 0) {
		fprintf(stderr, "dioload: cannot open '%s': %s\n", argv[optind], strerror(errno));
		return 1;
	}
	if (gate)
		gate_open();
	for (long i = 0; i < nw; i++) {
		if (pwrite(fd, buf, (size_t)bs, (off_t)(i % area) * bs) != bs) {
			fprintf(stderr, "dioload: write %ld: %s\n", i, strerror(errno));
			return 1;
		}
	}
	if (nw && fsync(fd)) {
		fprintf(stderr, "dioload: fsync: %s\n", strerror(errno));
		return 1;
	}
	t0 = now_ns();
	for (long i = 0; i < nr; i++) {
		if (pread(fd, buf, (size_t)bs, (off_t)(i % area) * bs) != bs) {
			fprintf(stderr, "dioload: read %ld: %s\n", i, strerror(errno));
			return 1;
		}
	}
	t1 = now_ns();
	if (timed && nr)
		printf("%.1f\n", (t1 - t0) / (double)nr);
	close(fd);
	free(buf);
	return 0;
}
