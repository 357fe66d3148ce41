/* Start-up workload of record: spawns a tracer (CMD, "%p" replaced by this process's pid), then makes marked getppid calls timed from the spawn; ends the tracer with SIGINT. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/*
 * getppid ignores its arguments, and raw_syscalls:sys_enter records them:
 * args[0] marks the call as this workload's, args[1] says which kind, and
 * args[2] carries the microseconds since the spawn (ticks) or the call's
 * number in the burst.
 */
#define MARK 0x5ec0de
#define KIND_TICK 1
#define KIND_BURST 2

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void sleep_until(double t_us)
{
	struct timespec ts;
	double d = t_us - now_us();

	if (d <= 0)
		return;
	ts.tv_sec = (time_t)(d / 1e6);
	ts.tv_nsec = (long)((d - (double)ts.tv_sec * 1e6) * 1e3);
	nanosleep(&ts, NULL);
}

static void usage(void)
{
	fprintf(stderr, "usage: rec_spawn ticks TOTAL_MS -- CMD...   (a marked call every 100 us for TOTAL_MS)\n"
			"       rec_spawn burst AT_MS N -- CMD...    (N marked calls at AT_MS after the spawn)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int ticks, cmd = 0, status = 0;
	long total_ms = 0, at_ms = 0, n = 0;
	char pid[32];
	double t0, end;
	pid_t child;

	if (argc < 4)
		usage();
	ticks = !strcmp(argv[1], "ticks");
	if (!ticks && strcmp(argv[1], "burst"))
		usage();
	for (int i = 2; i < argc; i++)
		if (!strcmp(argv[i], "--")) {
			cmd = i + 1;
			break;
		}
	if (!cmd || cmd >= argc || (ticks && cmd != 4) || (!ticks && cmd != 5))
		usage();
	if (ticks)
		total_ms = atol(argv[2]);
	else {
		at_ms = atol(argv[2]);
		n = atol(argv[3]);
	}
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	for (int i = cmd; i < argc; i++)
		if (!strcmp(argv[i], "%p"))
			argv[i] = pid;
	t0 = now_us();
	child = fork();
	if (child < 0) {
		perror("fork");
		return 1;
	}
	if (child == 0) {
		/* started in the background by a shell, this process ignores SIGINT: the tracer must not */
		signal(SIGINT, SIG_DFL);
		execvp(argv[cmd], argv + cmd);
		perror(argv[cmd]);
		_exit(127);
	}
	if (ticks) {
		end = t0 + (double)total_ms * 1e3;
		for (double t = now_us(); t < end; t = now_us()) {
			syscall(SYS_getppid, MARK, KIND_TICK, (long)(t - t0));
			sleep_until(t + 100);
		}
	} else {
		sleep_until(t0 + (double)at_ms * 1e3);
		printf("burst at %.1f ms after the spawn\n", (now_us() - t0) / 1e3);
		for (long i = 0; i < n; i++)
			syscall(SYS_getppid, MARK, KIND_BURST, i);
	}
	fflush(stdout);
	kill(child, SIGINT);
	if (waitpid(child, &status, 0) < 0) {
		perror("waitpid");
		return 1;
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
