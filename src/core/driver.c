/* The drivers' common loop: wait for the next deadline, a stop signal or the -p process's exit; collect all; write each report. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "core/cmd.h"
#include "core/driver.h"
#include "core/loader.h"
#include "core/pin.h"
#include "core/log.h"
#include "core/procfs.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/* Longest sleep between looks at the stop flag: a signal that lands just before a wait is seen this late. */
#define TICK_S 0.2

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

void ks_sort_key_error(const char *key, const char *collector)
{
	p_err("invalid --sort key '%s': %s reports have no such column; try count, total, p99, max or a column name",
	      key, collector);
}

void ks_report_open_error(const struct ks_collector *col, int err)
{
	/* the loader says why each hook failed: privilege, tracefs, the kernel */
	if (err == -E2BIG || ks_pin_failed())
		return; /* over the memory budget, or pins that do not fit: said already, naming the cause */
	if (err == -ECANCELED)
		return; /* the collector said why itself (funclat: which target did not attach) */
	if (ks_load_error())
		p_err("%s: %s", col->spec.name, ks_load_error());
	else if (err == -EPERM || err == -EACCES)
		p_err("%s: cannot load BPF programs: %s; run as root or with CAP_BPF and CAP_PERFMON", col->spec.name,
		      strerror(-err));
	else
		p_err("%s: cannot load and attach: %s", col->spec.name, strerror(-err));
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The -p process: a pidfd that turns readable when its leader exits, then /proc each tick. */
struct watch {
	uint32_t pid;
	int fd;
	bool gone;
};

static void watch_init(struct watch *w, uint32_t pid)
{
	w->pid = pid;
	w->gone = false;
	w->fd = -1;
	if (!pid)
		return;
	w->fd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
	if (w->fd < 0 && errno == ESRCH)
		w->gone = true;
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

static bool watch_gone(struct watch *w)
{
	if (!w->pid || w->gone)
		return w->gone;
	if (w->fd >= 0) {
		struct pollfd p = { .fd = w->fd, .events = POLLIN };

		if (poll(&p, 1, 0) <= 0)
			return false;
		/* the leader exited; its threads may live on: look each tick from now on */
		close(w->fd);
		w->fd = -1;
	}
	w->gone = proc_ended(w->pid);
	return w->gone;
}

/* Sleeps until @deadline (monotonic seconds; 0: none), a stop signal, the watched process's or the command's exit. */
static void wait_until(double deadline, struct watch *w, struct ks_cmd *cmd)
{
	/* the command's SIGCHLD interrupts the poll */
	while (!ks_stop_signal && !watch_gone(w) && !ks_cmd_exited(cmd)) {
		double left = deadline ? deadline - now_s() : TICK_S;
		struct pollfd p = { .fd = w->fd, .events = POLLIN };

		if (left <= 0)
			return;
		/* in ticks: a signal that raced the check above, and "-d 1e300", cannot hang the loop */
		if (left > TICK_S)
			left = TICK_S;
		poll(&p, w->fd >= 0 ? 1 : 0, (int)(left * 1000) + (left * 1000 < 1));
	}
}

/* Says once that the final report is dropped; on stderr only, since stdout is what is blocked. */
static void say_abandoned(bool final)
{
	bool json = ks_json;

	ks_json = false;
	p_err("%s abandoned: the output is not being read (stopped by signal %d)", final ? "the final report" : "a report",
	      (int)ks_stop_signal);
	ks_json = json;
}

/* Collects every instance into a report and writes each; 0 on success, 1 on a failure, 2 on a bad --sort. */
static int emit(struct ks_driver *d, int interval, double window, bool final)
{
	struct ks_report *rs = calloc((size_t)d->n, sizeof(*rs));
	int *errs = calloc((size_t)d->n, sizeof(*errs));
	struct timespec wall, mono;
	int ret = 0;

	if (!rs || !errs) {
		free(rs);
		free(errs);
		p_err("out of memory");
		return 1;
	}
	for (int i = 0; i < d->n; i++)
		ks_instance_report_init(&d->in[i], &rs[i]);
	ks_instances_collect(d->in, d->n, rs, errs);
	clock_gettime(CLOCK_REALTIME, &wall);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	for (int i = 0; i < d->n && ret != 2; i++) {
		const char *name = d->in[i].col->spec.name;
		struct ks_report *r = &rs[i];
		char *buf = NULL;
		size_t len = 0;
		int err, over;

		r->interval = interval;
		r->duration_s = window;
		r->has_time = true;
		r->wall = wall;
		r->mono = mono;
		r->cmd = d->c->cmd;
		if (errs[i]) {
			p_err("%s: cannot read results: %s", name, strerror(-errs[i]));
			ret = 1;
			continue;
		}
		over = ks_report_overflow(r);
		if (over) {
			/* a collector that set more than a row holds: an error, not a silent drop */
			p_err("%s: %d report values did not fit (row limits: %d keys, %d values, %d histograms); "
			      "the report is incomplete",
			      name, over, KS_ROW_KEYS, KS_ROW_VALS, KS_ROW_XHISTS);
			ret = 1;
		}
		if (r->sort_key && ks_report_sort_by(r, r->sort_key) == -ENOENT) {
			ks_sort_key_error(r->sort_key, name);
			ret = 2;
			break;
		}
		if (!r->sort_key)
			ks_report_sort(r);
		err = ks_writer_render(d->w, r, &buf, &len);
		if (!err && d->n > 1 && d->w->report == ks_write_text) {
			/* several collectors in one stream: each text report says whose it is */
			char head[96];
			int hl = snprintf(head, sizeof(head), "=== %s ===\n", name);

			err = ks_sink_write(d->sink, head, (size_t)hl, d->abandoned ? 0 : KS_STOP_GRACE_MS);
		}
		if (!err)
			err = ks_sink_write(d->sink, buf, len, d->abandoned ? 0 : KS_STOP_GRACE_MS);
		free(buf);
		if (err == -EINTR) {
			d->abandoned = true;
			say_abandoned(final);
			ret = 1;
			break;
		} else if (err) {
			p_err("cannot write the %s report%s%s: %s", name, d->sink->path ? " to " : "",
			      d->sink->path ? d->sink->path : "", strerror(-err));
			ret = 1;
		}
	}
	for (int i = 0; i < d->n; i++)
		ks_report_free(&rs[i]);
	free(rs);
	free(errs);
	return ret;
}

int ks_drive(struct ks_driver *d)
{
	const struct ks_common *c = d->c;
	struct watch w;
	double start, last, end;
	int ret = 0, interval = 0, e;

	watch_init(&w, c->pid);
	start = last = now_s();
	end = c->duration ? start + c->duration : 0;
	while (!ks_stop_signal && !watch_gone(&w) && !ks_cmd_exited(c->cmd)) {
		double next = c->interval ? last + c->interval : 0, t;

		if (!next || (end && end < next))
			next = end;
		wait_until(next, &w, c->cmd);
		if (ks_stop_signal || w.gone || ks_cmd_exited(c->cmd))
			break;
		t = now_s();
		if (!next || t < next)
			continue;
		if (c->interval && (!end || t < end)) {
			e = emit(d, ++interval, t - last, false);
			if (e == 2) {
				ret = 2;
				goto out;
			}
			if (e)
				ret = 1;
			last = t;
			continue;
		}
		break;
	}
	/* a command still running at -d or a stop signal ends first (the signal forwarded), inside the window */
	ks_cmd_stop(c->cmd, (int)ks_stop_signal);
	/* the final report: the last (maybe partial) interval, or the whole run */
	e = emit(d, c->interval ? interval + 1 : 0, now_s() - last, true);
	if (e)
		ret = e;
	ks_cmd_say(c->cmd);
	if (ks_stop_signal)
		p_info("stopped by signal %d", (int)ks_stop_signal);
	else if (w.gone)
		p_info("process %u exited", w.pid);
out:
	if (w.fd >= 0)
		close(w.fd);
	return ret;
}
