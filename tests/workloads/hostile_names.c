/* Test workload of hostile task names: after SIGUSR1, rounds of children and threads named with invalid UTF-8, quotes, backslashes, newlines, braces and 4-byte characters fault, fork and make syscalls. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "gate.h"

/*
 * Every name a process can give itself without privilege that breaks a
 * careless writer; the kernel keeps 15 bytes, so the last one (four 4-byte
 * characters, 16 bytes) ends inside its fourth character.
 */
static const char *const names[] = {
	"bad\xffname",	      /* invalid UTF-8 */
	"q\"uote",	      /* a quote */
	"back\\slash",	      /* a backslash */
	"new\nline",	      /* a newline */
	"br}a{ce=,",	      /* label syntax */
	"esc\x1b[31m",	      /* a terminal escape */
	"over\xc0\xaflong",   /* an overlong '/' */
	"sur\xed\xa0\x80",    /* a UTF-16 surrogate */
	"c1\xc2\x9b",	      /* a C1 control (CSI) */
	"fire\xf0\x9f\x94\xa5", /* a valid 4-byte character */
	"\xf0\x9f\x94\xa5\xf0\x9f\x94\xa5\xf0\x9f\x94\xa5\xf0\x9f\x94\xa5",
};
#define NNAMES (sizeof(names) / sizeof(names[0]))

static long pages, psz;

/* Touches @pages new pages (a fault each) and makes a few syscalls. */
static void work(void)
{
	char *p = mmap(NULL, (size_t)(pages * psz), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		_exit(1);
	for (long j = 0; j < pages; j++)
		p[j * psz] = 1;
	for (int i = 0; i < 10; i++)
		syscall(SYS_getppid);
	munmap(p, (size_t)(pages * psz));
}

static void *thread_main(void *arg)
{
	prctl(PR_SET_NAME, arg, 0, 0, 0);
	work();
	return NULL;
}

/* A child named @name: works, runs a thread of the same name, forks a grandchild that works too. */
static void child(const char *name)
{
	pthread_t t;
	pid_t g;
	int st;

	prctl(PR_SET_NAME, name, 0, 0, 0);
	work();
	if (pthread_create(&t, NULL, thread_main, (void *)name) || pthread_join(t, NULL))
		_exit(1);
	g = fork();
	if (g == 0) {
		work();
		_exit(0);
	}
	if (g < 0 || waitpid(g, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
		_exit(1);
	_exit(0);
}

int main(int argc, char **argv)
{
	long rounds, r;
	const struct timespec now = { 0, 0 }, gap = { 0, 50 * 1000 * 1000 };
	int bad = 0;

	psz = sysconf(_SC_PAGESIZE);
	if (argc != 3 || (rounds = atol(argv[1])) < 1 || (pages = atol(argv[2])) < 1) {
		fprintf(stderr, "usage: hostile_names ROUNDS PAGES\n"
				"  prints its pid, waits for SIGUSR1, then ROUNDS times (50 ms apart) forks one child\n"
				"  per hostile name; each renames itself, touches PAGES pages, makes syscalls, runs a\n"
				"  thread and a grandchild doing the same; a second SIGUSR1 stops it early;\n"
				"  prints 'done BAD ROUNDS'\n");
		return 2;
	}
	gate_open();
	for (r = 0; r < rounds && sigtimedwait(&gate_set, NULL, &now) < 0; r++) {
		for (size_t i = 0; i < NNAMES; i++) {
			pid_t pid = fork();
			int st;

			if (pid < 0)
				return 1;
			if (pid == 0)
				child(names[i]);
			if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
				bad = 1;
		}
		nanosleep(&gap, NULL);
	}
	printf("done %d %ld\n", bad, r);
	fflush(stdout);
	return bad;
}
