/* Start-up benchmark: spawn to "tracing" of ksight and its anchors, alternating rounds, medians (issue 11 item 6). */
#include <errno.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/*
 * Each tool runs on a pseudo-terminal, as a user would start it: a tool
 * that prints its ready line with stdio (libbpf-tools, bpftrace) flushes it
 * at the newline there, where a pipe would hold it until exit.
 */
struct tool {
	const char *name;
	const char *ready; /* substring of the line printed once attached */
	char *argv[6];
	double ms[256];
	int n;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Milliseconds from fork to the ready line, or -1 when it never came within 10 s. */
static double one_run(const struct tool *t)
{
	char buf[8192];
	size_t len = 0;
	double t0 = now_ms(), took = -1;
	int fd, st;
	pid_t pid = forkpty(&fd, NULL, NULL, NULL);

	if (pid < 0)
		return -1;
	if (pid == 0) {
		execv(t->argv[0], t->argv);
		_exit(127);
	}
	while (now_ms() - t0 < 10000) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t r;

		if (poll(&p, 1, 100) <= 0)
			continue;
		r = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (r <= 0)
			break;
		len += r;
		buf[len] = 0;
		if (strstr(buf, t->ready)) {
			took = now_ms() - t0;
			break;
		}
		if (len > sizeof(buf) / 2) { /* keep the tail: the ready line may straddle */
			memmove(buf, buf + len - 256, 256);
			len = 256;
		}
	}
	kill(pid, SIGINT);
	/* drain the final report, so the tool is never blocked writing it */
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (poll(&p, 1, 200) > 0 && read(fd, buf, sizeof(buf)) > 0)
			continue;
		if (waitpid(pid, &st, WNOHANG) == pid)
			break;
		if (now_ms() - t0 > 20000)
			kill(pid, SIGKILL);
	}
	close(fd);
	return took;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp);
	return n ? (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) : -1;
}

int main(int argc, char **argv)
{
	const char *ksight = argc > 1 ? argv[1] : "./ksight";
	int rounds = argc > 2 ? atoi(argv[2]) : 15;
	/* another build (say, the one before a change), timed in the same alternating rounds */
	const char *other = argc > 3 ? argv[3] : NULL;
	struct tool tools[] = {
		{ .name = "ksight syscalls", .ready = "tracing", .argv = { (char *)ksight, "syscalls", NULL } },
		{ .name = "ksight syscalls -L", .ready = "tracing", .argv = { (char *)ksight, "syscalls", "-L", NULL } },
		{ .name = "syscount -L", .ready = "Tracing", .argv = { "/usr/sbin/syscount", "-L", NULL } },
		{ .name = "ksight runqlat", .ready = "tracing", .argv = { (char *)ksight, "runqlat", NULL } },
		{ .name = "runqlat (libbpf-tools)", .ready = "Tracing", .argv = { "/usr/sbin/runqlat", NULL } },
		{ .name = "other: syscalls", .ready = "tracing", .argv = { (char *)other, "syscalls", NULL } },
		{ .name = "other: runqlat", .ready = "tracing", .argv = { (char *)other, "runqlat", NULL } },
	};
	int nt = sizeof(tools) / sizeof(tools[0]) - (other ? 0 : 2);

	if (rounds < 1 || rounds > 256) {
		fprintf(stderr, "usage: startup [KSIGHT [ROUNDS 1-256 [OTHER_KSIGHT]]]\n");
		return 2;
	}
	for (int r = 0; r < rounds; r++)
		for (int i = 0; i < nt; i++) {
			/* alternate the order, so neither side always follows the other's teardown */
			struct tool *t = &tools[r % 2 ? nt - 1 - i : i];
			double ms;

			if (access(t->argv[0], X_OK))
				continue;
			ms = one_run(t);
			if (ms >= 0)
				t->ms[t->n++] = ms;
		}
	printf("spawn to attached, median of %d alternating rounds (ms):\n", rounds);
	for (int i = 0; i < nt; i++) {
		if (!tools[i].n) {
			printf("  %-24s not run (%s missing or never ready)\n", tools[i].name, tools[i].argv[0]);
			continue;
		}
		double med = median(tools[i].ms, tools[i].n); /* sorts: ms[0] is then the minimum */

		printf("  %-24s %7.1f  (min %.1f, %d runs)\n", tools[i].name, med, tools[i].ms[0], tools[i].n);
	}
	return 0;
}
