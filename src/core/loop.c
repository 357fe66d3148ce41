/* The one run loop: waits for the next tick, the duration's end, a stop signal, the -p process's or the command's exit, or a readable fd; calls the engine. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "core/cmd.h"
#include "core/loop.h"
#include "core/procfs.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/* Longest sleep between looks at the stop flag: a signal that lands just before a wait is seen this late. */
#define SLICE_S 0.2

volatile sig_atomic_t ks_stop_signal;

static void on_signal(int sig)
{
	ks_stop_signal = sig;
}

void ks_stop_install(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0; /* no SA_RESTART: a blocked write or poll returns EINTR */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

double ks_loop_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void ks_loop_init(struct ks_loop *l, const struct ks_loop_opts *o)
{
	memset(l, 0, sizeof(*l));
	l->o = *o;
	if (!l->o.stop)
		l->o.stop = &ks_stop_signal;
	if (l->o.slice <= 0)
		l->o.slice = SLICE_S;
	l->pidfd = -1;
}

int ks_loop_add_fd(struct ks_loop *l, int fd)
{
	if (l->nfds == KS_LOOP_FDS)
		return -E2BIG;
	l->fds[l->nfds++] = fd;
	return 0;
}

void ks_loop_stop(struct ks_loop *l, int sig)
{
	if (l->why == KS_LOOP_RUNNING) {
		l->why = KS_LOOP_SIGNAL;
		l->sig = sig;
	}
}

/* The -p process: a pidfd that turns readable when its leader exits, then /proc each wait. */
static void watch_init(struct ks_loop *l)
{
	if (!l->o.pid)
		return;
	l->pidfd = (int)syscall(SYS_pidfd_open, (pid_t)l->o.pid, 0);
	if (l->pidfd < 0 && errno == ESRCH)
		l->gone = true;
}

/*
 * Whether process @pid has ended: no /proc entry, or a zombie with no
 * thread left.  A leader that called pthread_exit is a zombie too while
 * its other threads run on: that process is alive.
 */
static bool proc_ended(uint32_t pid)
{
	int nthreads = 0, err;
	char state = 0;

	err = ks_procfs_stat(NULL, pid, &state, &nthreads);
	if (err)
		return err == -ENOENT || err == -ESRCH;
	return (state == 'Z' || state == 'X') && nthreads <= 1;
}

static bool watch_gone(struct ks_loop *l)
{
	if (!l->o.pid || l->gone)
		return l->gone;
	if (l->pidfd >= 0) {
		struct pollfd p = { .fd = l->pidfd, .events = POLLIN };

		if (poll(&p, 1, 0) <= 0)
			return false;
		/* the leader exited; its threads may live on: look each wait from now on */
		close(l->pidfd);
		l->pidfd = -1;
	}
	l->gone = proc_ended(l->o.pid);
	return l->gone;
}

/* Whether the run has ended; sets why the first time (a stop signal first, then -p, then the command). */
static bool ended(struct ks_loop *l)
{
	if (l->why != KS_LOOP_RUNNING)
		return true;
	if (*l->o.stop) {
		l->why = KS_LOOP_SIGNAL;
		l->sig = (int)*l->o.stop;
	} else if (watch_gone(l)) {
		l->why = KS_LOOP_PROCESS;
	} else if (ks_cmd_exited(l->o.cmd)) {
		l->why = KS_LOOP_COMMAND;
	}
	return l->why != KS_LOOP_RUNNING;
}

/* A callback's result @r: 0 goes on; true when it ended the run. */
static bool took(struct ks_loop *l, int r)
{
	if (!r)
		return false;
	if (l->why == KS_LOOP_RUNNING) {
		l->why = r < 0 ? KS_LOOP_ERROR : KS_LOOP_ENGINE;
		l->err = r < 0 ? r : 0;
	}
	return true;
}

/* Sleeps until @deadline (monotonic seconds; 0: none) or the run's end, handing readable fds to the engine. */
static void wait_until(struct ks_loop *l, const struct ks_engine *e, void *ctx, double deadline)
{
	/* the command's SIGCHLD and the stop signals interrupt the poll */
	while (!ended(l)) {
		double left = deadline ? deadline - ks_loop_now() : l->o.slice;
		struct pollfd p[KS_LOOP_FDS + 1];
		int n = 0, got;

		if (left <= 0)
			return;
		/* in slices: a signal that raced the check above, and "-d 1e300", cannot hang the loop */
		if (left > l->o.slice)
			left = l->o.slice;
		for (int i = 0; i < l->nfds; i++)
			p[n++] = (struct pollfd){ .fd = l->fds[i], .events = POLLIN };
		if (l->pidfd >= 0)
			p[n++] = (struct pollfd){ .fd = l->pidfd, .events = POLLIN };
		got = poll(p, (nfds_t)n, (int)(left * 1000) + (left * 1000 < 1));
		for (int i = 0; got > 0 && i < l->nfds; i++)
			if (p[i].revents && e->ready && took(l, e->ready(ctx, l, p[i].fd)))
				return;
		if (e->wake && took(l, e->wake(ctx, l)))
			return;
	}
}

uint64_t ks_loop_grid_next(double start, double interval, uint64_t k, double now)
{
	uint64_t first = (uint64_t)((now - start) / interval) + 1;

	/* the division's rounding either way: the tick after @now, never one at or before it */
	while (first > 1 && start + (double)(first - 1) * interval > now)
		first--;
	while (start + (double)first * interval <= now)
		first++;
	return first > k ? first : k + 1;
}

int ks_loop_run(struct ks_loop *l, const struct ks_engine *e, void *ctx)
{
	double next_tick;
	uint64_t k = 1; /* the grid point next_tick is (from the start) */
	int r;

	if (e->open && (r = e->open(ctx, l)))
		return r;
	/* everything attached: the command's first system call is seen */
	if (l->o.cmd && (r = ks_cmd_start(l->o.cmd)))
		return r;
	watch_init(l);
	l->start = l->last = ks_loop_now();
	l->end = l->o.duration > 0 ? l->start + l->o.duration : 0;
	next_tick = l->o.interval > 0 ? l->start + l->o.interval : 0;
	while (!ended(l)) {
		double next = next_tick, t;

		if (!next || (l->end && l->end < next))
			next = l->end;
		wait_until(l, e, ctx, next);
		if (ended(l))
			break;
		t = ks_loop_now();
		if (!next || t < next)
			continue;
		if (l->end && t >= l->end) {
			l->why = KS_LOOP_DURATION;
			break;
		}
		/* a tick: the engine sees the window from l->last to now */
		l->ticks++;
		l->now = t;
		if (e->tick && took(l, e->tick(ctx, l)))
			break;
		l->last = t;
		if (l->o.tick_from_end) {
			next_tick = ks_loop_now() + l->o.interval;
		} else {
			/* on the grid from the start, so lateness does not add up; the points already passed are skipped */
			uint64_t nk = ks_loop_grid_next(l->start, l->o.interval, k, ks_loop_now());

			l->missed += nk - k - 1;
			k = nk;
			next_tick = l->start + (double)k * l->o.interval;
		}
	}
	if (l->pidfd >= 0) {
		close(l->pidfd);
		l->pidfd = -1;
	}
	/* a command still running at -d or a stop signal ends first (the signal forwarded), inside the window */
	ks_cmd_stop(l->o.cmd, l->why == KS_LOOP_SIGNAL ? l->sig : (int)*l->o.stop);
	if (e->close)
		return e->close(ctx, l);
	return l->why == KS_LOOP_ERROR ? l->err : 0;
}
