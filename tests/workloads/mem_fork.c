/* Test workload: forks children that fault under the parent's name, take a new name (prctl or exec), fault N pages and exit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include "gate.h"

/* Touches @pages new anonymous pages, one fault each. */
static void touch(long pages)
{
	long psz = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, (size_t)(pages * psz), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		_exit(1);
	madvise(p, (size_t)(pages * psz), MADV_NOHUGEPAGE);
	for (long i = 0; i < pages; i++)
		p[i * psz] = 1;
}

static void usage(void)
{
	fprintf(stderr, "usage: mem_fork [-k kids] [-n pages] (-c NAME | -e PATH) [-g]\n"
			"  each child touches 3 pages, renames itself to NAME (prctl) or execs PATH\n"
			"  (a link to this program: its name becomes the link's), touches N pages and exits\n");
	exit(2);
}

int main(int argc, char **argv)
{
	long kids = 4, pages = 100;
	const char *name = NULL, *path = NULL;
	int opt, gate = 0, bad = 0;

	while ((opt = getopt(argc, argv, "k:n:c:e:x:g")) != -1) {
		switch (opt) {
		case 'k': kids = atol(optarg); break;
		case 'n': pages = atol(optarg); break;
		case 'c': name = optarg; break;
		case 'e': path = optarg; break;
		case 'x': touch(atol(optarg)); _exit(0); /* the exec'd child */
		case 'g': gate = 1; break;
		default: usage();
		}
	}
	if (!name == !path || kids < 1 || pages < 1)
		usage();
	if (gate)
		gate_open();
	for (long i = 0; i < kids; i++) {
		pid_t pid = fork();

		if (pid < 0)
			return 1;
		if (pid)
			continue;
		/* faults under the parent's name first: the child's row is made now */
		touch(3);
		if (name) {
			prctl(PR_SET_NAME, name, 0, 0, 0);
			touch(pages);
			_exit(0);
		}
		char n[32];

		snprintf(n, sizeof(n), "%ld", pages);
		execl(path, path, "-x", n, (char *)NULL);
		_exit(127);
	}
	for (long i = 0; i < kids; i++) {
		int st;

		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			bad = 1;
	}
	printf("done %d\n", bad);
	fflush(stdout);
	if (gate)
		gate_wait();
	return bad;
}
