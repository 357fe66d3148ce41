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

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void usage(void)
{
	fprintf(stderr, "usage: dioload [-w writes] [-r reads] [-b block_bytes] [-s blocks_in_area] [-c comm] [-g] [-t|-T] PATH [PROGRAM ARG...]\n"
			"  PROGRAM  exec'd with its ARGs once the I/O is done (I/O on both sides of an exec); options go before PATH\n"
			"  -g  print the pid, then wait for SIGUSR1 before any I/O\n"
			"  -t  print the mean ns per read on stdout\n"
			"  -T  print the median ns of the reads, each timed (robust to a busy machine)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	long nw = 0, nr = 0, bs = 4096, area = 0;
	int opt, fd, gate = 0, timed = 0;
	double t0, t1, *each = NULL;
	void *buf;

	while ((opt = getopt(argc, argv, "+w:r:b:s:c:gtT")) != -1) {
		switch (opt) {
		case 'w': nw = atol(optarg); break;
		case 'r': nr = atol(optarg); break;
		case 'b': bs = atol(optarg); break;
		case 's': area = atol(optarg); break;
		case 'c': prctl(PR_SET_NAME, optarg, 0, 0, 0); break;
		case 'g': gate = 1; break;
		case 't': timed = 1; break;
		case 'T': timed = 2; break;
		default: usage();
		}
	}
	if (optind >= argc || bs <= 0 || bs % 512 || nw < 0 || nr < 0)
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
	if (timed == 2 && nr && !(each = malloc((size_t)nr * sizeof(*each)))) {
		fprintf(stderr, "dioload: out of memory\n");
		return 1;
	}
	t0 = now_ns();
	for (long i = 0; i < nr; i++) {
		double r0 = each ? now_ns() : 0;

		if (pread(fd, buf, (size_t)bs, (off_t)(i % area) * bs) != bs) {
			fprintf(stderr, "dioload: read %ld: %s\n", i, strerror(errno));
			return 1;
		}
		if (each)
			each[i] = now_ns() - r0;
	}
	t1 = now_ns();
	if (timed == 1 && nr)
		printf("%.1f\n", (t1 - t0) / (double)nr);
	if (each) {
		qsort(each, (size_t)nr, sizeof(*each), cmp_double);
		printf("%.1f\n", each[nr / 2]);
		free(each);
	}
	close(fd);
	free(buf);
	if (optind + 1 < argc) {
		fflush(stdout);
		execv(argv[optind + 1], &argv[optind + 1]);
		fprintf(stderr, "dioload: cannot exec '%s': %s\n", argv[optind + 1], strerror(errno));
		return 1;
	}
	return 0;
}
