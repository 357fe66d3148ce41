/* Test workload: after SIGUSR1, touches exactly N new anonymous pages (L times over), then optionally reads a file through the page cache. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include "gate.h"

static void usage(void)
{
	fprintf(stderr, "usage: memload [-n pages] [-l loops] [-s ms] [-f file_to_read] [-c comm] [-g]\n"
			"  -n  touch this many new anonymous pages (one write each, no huge pages)\n"
			"  -l  do it this many times, a fresh mapping each time, -s ms apart\n"
			"  -f  then evict FILE from the page cache and read it all (memcg reclaim under a limit)\n"
			"  -g  print the pid and wait for SIGUSR1 first; wait for another before exiting\n"
			"prints the minor and major faults the kernel counted meanwhile\n");
	exit(2);
}

/* Reads @path twice through the page cache, dropping it first: each pass charges every page anew. */
static int touch(long pages, long psz)
{
	char *p = mmap(NULL, (size_t)(pages * psz), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		fprintf(stderr, "memload: mmap: %s\n", strerror(errno));
		return 1;
	}
	/* one fault per page: no transparent huge page may cover several */
	madvise(p, (size_t)(pages * psz), MADV_NOHUGEPAGE);
	for (long i = 0; i < pages; i++)
		p[i * psz] = 1;
	munmap(p, (size_t)(pages * psz));
	return 0;
}

static int read_file(const char *path)
{
	static char buf[1 << 16];
	int fd = open(path, O_RDONLY);

	if (fd < 0) {
		fprintf(stderr, "memload: cannot open '%s': %s\n", path, strerror(errno));
		return 1;
	}
	for (int pass = 0; pass < 2; pass++) {
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		lseek(fd, 0, SEEK_SET);
		while (1) {
			ssize_t n = read(fd, buf, sizeof(buf));

			if (n < 0) {
				fprintf(stderr, "memload: read: %s\n", strerror(errno));
				close(fd);
				return 1;
			}
			if (!n)
				break;
		}
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	long pages = 0, loops = 1, ms = 0, psz = sysconf(_SC_PAGESIZE);
	const char *file = NULL;
	int opt, gate = 0, err = 0;
	struct rusage r0, r1;

	while ((opt = getopt(argc, argv, "n:l:s:f:c:g")) != -1) {
		switch (opt) {
		case 'n': pages = atol(optarg); break;
		case 'l': loops = atol(optarg); break;
		case 's': ms = atol(optarg); break;
		case 'f': file = optarg; break;
		case 'c': prctl(PR_SET_NAME, optarg, 0, 0, 0); break;
		case 'g': gate = 1; break;
		default: usage();
		}
	}
	if (optind != argc || pages < 0 || loops < 1 || ms < 0)
		usage();
	if (gate)
		gate_open();
	getrusage(RUSAGE_SELF, &r0);
	/* mapped only now: no page of it exists before the first touch */
	for (long l = 0; pages && l < loops && !err; l++) {
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

		err = touch(pages, psz);
		if (ms && l + 1 < loops)
			nanosleep(&ts, NULL);
	}
	if (!err && file)
		err = read_file(file);
	getrusage(RUSAGE_SELF, &r1);
	printf("faults %ld %ld\n", r1.ru_minflt - r0.ru_minflt, r1.ru_majflt - r0.ru_majflt);
	fflush(stdout);
	/* still there, and quiet, while the test reads /proc/PID/stat */
	if (gate)
		gate_wait();
	return err;
}
