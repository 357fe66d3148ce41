/* Test workload of serve's series cap: after SIGUSR1, K short-lived children (or fewer: a second SIGUSR1 ends it), each named PREFIX<i>, touch N pages and exit. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "gate.h"

int main(int argc, char **argv)
{
	long kids, pages, psz = sysconf(_SC_PAGESIZE), i;
	const struct timespec now = { 0, 0 };
	int bad = 0;

	if (argc != 4 || (kids = atol(argv[1])) < 1 || (pages = atol(argv[2])) < 1) {
		fprintf(stderr, "usage: namefork KIDS PAGES PREFIX\n"
				"  prints its pid, waits for SIGUSR1, then each child renames itself PREFIX<i>,\n"
				"  touches PAGES new pages (one fault each) and exits; a second SIGUSR1 stops it\n"
				"  before KIDS; prints 'done BAD CHILDREN'\n");
		return 2;
	}
	gate_open();
	/* a test that needs the churn to outlast something sends the second signal when it is over */
	for (i = 0; i < kids && sigtimedwait(&gate_set, NULL, &now) < 0; i++) {
		pid_t pid = fork();
		int st;

		if (pid < 0)
			return 1;
		if (pid == 0) {
			char name[32];
			char *p;

			snprintf(name, sizeof(name), "%.8s%ld", argv[3], i); /* the kernel keeps 15 bytes */
			prctl(PR_SET_NAME, name, 0, 0, 0);
			p = mmap(NULL, (size_t)(pages * psz), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (p == MAP_FAILED)
				_exit(1);
			for (long j = 0; j < pages; j++)
				p[j * psz] = 1;
			_exit(0);
		}
		/* one at a time: short-lived, never many alive at once */
		if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			bad = 1;
	}
	printf("done %d %ld\n", bad, i);
	fflush(stdout);
	return bad;
}
