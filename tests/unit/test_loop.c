/* Unit tests of core/loop.c, no root: a fake engine with a pipe fd, short durations, a stop flag, a child as the -p process. */
#include <signal.h>
#include <sys/wait.h>
#include "test.h"
#include "core/loop.h"

/* The fake engine: counts each call, and does what the case asks at the Nth tick or byte. */
struct fake {
	int pipe[2];
	int opens, ticks, readies, wakes, closes;
	int open_err;	   /* open's result */
	int tick_ret;	   /* what the tick_at-th tick returns */
	int tick_at;
	int write_at;	   /* the tick that writes a byte into the pipe (0: none) */
	int done_after;	   /* ready returns KS_LOOP_DONE after this many bytes (0: never) */
	int stop_sig;	   /* ready calls ks_loop_stop with it */
	volatile sig_atomic_t flag; /* the stop flag the case passes as opts.stop */
	int flag_at;	   /* the tick that sets it to SIGTERM */
	double sleep_s;	   /* each tick takes this long */
	double min_window; /* the shortest window a tick saw */
	int sleep_tick;	   /* only this tick takes sleep_s (0: every tick) */
	int prefill;	   /* bytes in the pipe from open on: ready is called at once, again and again */
	double ready_sleep_s; /* each ready takes this long: the wait for a tick overruns it */
	double min_off, max_off; /* how far after its grid point (start + k * interval) a tick began */
	uint64_t missed;   /* the loop's count of skipped grid points, at close */
	enum ks_loop_end why;
	int err, close_ticks;
	double closed_at;
};

static int f_open(void *ctx, struct ks_loop *l)
{
	struct fake *f = ctx;

	f->opens++;
	if (f->open_err)
		return f->open_err;
	for (int i = 0; i < f->prefill; i++)
		if (write(f->pipe[1], "x", 1) != 1)
			return -errno;
	return ks_loop_add_fd(l, f->pipe[0]);
}

static int f_tick(void *ctx, struct ks_loop *l)
{
	struct fake *f = ctx;
	double w = l->now - l->last;
	double off = l->now - l->start - (double)((uint64_t)f->ticks + 1 + l->missed) * l->o.interval;

	f->ticks++;
	if (!f->min_window || w < f->min_window)
		f->min_window = w;
	if (f->ticks == 1 || off < f->min_off)
		f->min_off = off;
	if (f->ticks == 1 || off > f->max_off)
		f->max_off = off;
	if (f->write_at && f->ticks >= f->write_at && write(f->pipe[1], "x", 1) != 1)
		return -errno;
	if (f->flag_at && f->ticks == f->flag_at)
		f->flag = SIGTERM;
	if (f->sleep_s > 0 && (!f->sleep_tick || f->sleep_tick == f->ticks))
		usleep((useconds_t)(f->sleep_s * 1e6));
	return f->tick_at && f->ticks == f->tick_at ? f->tick_ret : 0;
}

static int f_ready(void *ctx, struct ks_loop *l, int fd)
{
	struct fake *f = ctx;
	char b;

	if (fd != f->pipe[0] || read(fd, &b, 1) != 1)
		return -EBADF;
	f->readies++;
	if (f->ready_sleep_s > 0)
		usleep((useconds_t)(f->ready_sleep_s * 1e6));
	if (f->stop_sig) {
		ks_loop_stop(l, f->stop_sig);
		return 0;
	}
	return f->done_after && f->readies >= f->done_after ? KS_LOOP_DONE : 0;
}

static int f_wake(void *ctx, struct ks_loop *l)
{
	(void)l;
	((struct fake *)ctx)->wakes++;
	return 0;
}

static int f_close(void *ctx, struct ks_loop *l)
{
	struct fake *f = ctx;

	f->closes++;
	f->missed = l->missed;
	f->why = l->why;
	f->err = l->err;
	f->close_ticks = l->ticks;
	f->closed_at = ks_loop_now() - l->start;
	return l->why == KS_LOOP_ERROR ? 7 : 0;
}

static const struct ks_engine fake_engine = {
	.open = f_open, .tick = f_tick, .ready = f_ready, .wake = f_wake, .close = f_close,
};

/* Runs the fake engine with @o (its stop flag the fake's); the run's result. */
static int run(struct fake *f, struct ks_loop_opts o)
{
	struct ks_loop l;
	int ret;

	if (pipe(f->pipe))
		return -errno;
	o.stop = &f->flag;
	ks_loop_init(&l, &o);
	ret = ks_loop_run(&l, &fake_engine, f);
	close(f->pipe[0]);
	close(f->pipe[1]);
	return ret;
}

TEST(ticks_then_duration)
{
	struct fake f = { 0 };
	int ret = run(&f, (struct ks_loop_opts){ .duration = 0.35, .interval = 0.1 });

	EXPECT_EQ_INT(ret, 0);
	EXPECT_EQ_INT(f.opens, 1);
	EXPECT_EQ_INT(f.closes, 1);
	EXPECT_EQ_INT(f.why, KS_LOOP_DURATION);
	/* ticks at 0.1, 0.2, 0.3 (a late one may push the third past the end, never a fourth in) */
	EXPECT_TRUE(f.ticks >= 2 && f.ticks <= 3);
	EXPECT_EQ_INT(f.close_ticks, f.ticks);
	/* ticks are never early: each at or after its grid point */
	EXPECT_TRUE(f.min_off >= -1e-3);
	EXPECT_EQ_INT((int)f.missed, 0);
	EXPECT_TRUE(f.closed_at >= 0.35);
	EXPECT_EQ_INT(f.readies, 0);
}

TEST(no_interval_no_tick)
{
	struct fake f = { 0 };

	EXPECT_EQ_INT(run(&f, (struct ks_loop_opts){ .duration = 0.05 }), 0);
	EXPECT_EQ_INT(f.ticks, 0);
	EXPECT_EQ_INT(f.why, KS_LOOP_DURATION);
	EXPECT_TRUE(f.closed_at >= 0.05);
}

TEST(pipe_fd_ready_then_engine_done)
{
	struct fake f = { .write_at = 1, .done_after = 2 };

	/* the duration is a safety net: the second byte ends the run long before it */
	EXPECT_EQ_INT(run(&f, (struct ks_loop_opts){ .duration = 10, .interval = 0.02 }), 0);
	EXPECT_EQ_INT(f.why, KS_LOOP_ENGINE);
	EXPECT_EQ_INT(f.readies, 2);
	EXPECT_EQ_INT(f.ticks, 2);
	EXPECT_TRUE(f.closed_at < 5);
	/* every poll's return, the ready ones included, is followed by a wake */
	EXPECT_TRUE(f.wakes >= 2);
}

TEST(ready_stops_as_a_signal)
{
	struct fake f = { .write_at = 1, .stop_sig = SIGHUP };

	EXPECT_EQ_INT(run(&f, (struct ks_loop_opts){ .duration = 10, .interval = 0.02 }), 0);
	EXPECT_EQ_INT(f.why, KS_LOOP_SIGNAL);
	EXPECT_EQ_INT(f.readies, 1);
}

TEST(stop_flag_ends_after_the_tick)
{
	struct fake f = { .flag_at = 2 };
	struct ks_loop l;
	struct ks_loop_opts o = { .duration = 10, .interval = 0.02, .stop = &f.flag };

	ASSERT_EQ_INT(pipe(f.pipe), 0);
	ks_loop_init(&l, &o);
	EXPECT_EQ_INT(ks_loop_run(&l, &fake_engine, &f), 0);
	EXPECT_EQ_INT(f.why, KS_LOOP_SIGNAL);
	EXPECT_EQ_INT(l.sig, SIGTERM);
	EXPECT_EQ_INT(f.ticks, 2);
	EXPECT_TRUE(f.closed_at < 5);
	close(f.pipe[0]);
	close(f.pipe[1]);
}

TEST(tick_error_reaches_close)
{
	struct fake f = { .tick_at = 1, .tick_ret = -EIO };

	/* close's result is the run's */
	EXPECT_EQ_INT(run(&f, (struct ks_loop_opts){ .duration = 10, .interval = 0.02 }), 7);
	EXPECT_EQ_INT(f.why, KS_LOOP_ERROR);
	EXPECT_EQ_INT(f.err, -EIO);
	EXPECT_EQ_INT(f.ticks, 1);
}

TEST(tick_error_without_close)
{
	static const struct ks_engine e = { .tick = f_tick };
	struct fake f = { .tick_at = 3, .tick_ret = -EIO };
	struct ks_loop l;

	ks_loop_init(&l, &(struct ks_loop_opts){ .duration = 10, .interval = 0.02 });
	EXPECT_EQ_INT(ks_loop_run(&l, &e, &f), -EIO);
	EXPECT_EQ_INT(f.ticks, 3);
	EXPECT_EQ_INT(l.why, KS_LOOP_ERROR);
}

TEST(open_error_calls_nothing_more)
{
	struct fake f = { .open_err = -EPERM };

	EXPECT_EQ_INT(run(&f, (struct ks_loop_opts){ .duration = 0.05, .interval = 0.01 }), -EPERM);
	EXPECT_EQ_INT(f.opens, 1);
	EXPECT_EQ_INT(f.ticks + f.wakes + f.closes, 0);
}

TEST(tick_from_end_counts_after_the_tick)
{
	struct fake f = { .sleep_s = 0.05 };

	EXPECT_EQ_INT(run(&f, (struct ks_loop_opts){ .duration = 0.4, .interval = 0.1, .tick_from_end = true }), 0);
	/* ticks at 0.1, 0.25, ...: the second window holds the first tick's 50 ms */
	EXPECT_TRUE(f.ticks >= 2);
	EXPECT_TRUE(f.min_window >= 0.1 - 1e-3);
	{
		struct fake g = { .sleep_s = 0.05 };

		/* from the start instead: windows of 0.1 s whatever the tick took */
		EXPECT_EQ_INT(run(&g, (struct ks_loop_opts){ .duration = 0.4, .interval = 0.1 }), 0);
		EXPECT_TRUE(g.ticks >= f.ticks);
	}
}

/* Seconds this thread has waited on a run queue (schedstat's run_delay); 0 when the kernel does not say. */
static double run_delay(void)
{
	FILE *fp = fopen("/proc/thread-self/schedstat", "r");
	unsigned long long cpu, delay;
	int n;

	if (!fp)
		return 0;
	n = fscanf(fp, "%llu %llu", &cpu, &delay);
	fclose(fp);
	return n == 2 ? delay / 1e9 : 0;
}

TEST(wake_at_least_each_slice)
{
	struct fake f = { 0 };
	double delay = run_delay(), slept;

	EXPECT_EQ_INT(run(&f, (struct ks_loop_opts){ .duration = 0.2, .slice = 0.02 }), 0);
	/*
	 * The loop's promise is a wake after each wait of at most 20 ms, not that the scheduler runs
	 * it on time: a loaded machine can hold it runnable for longer than a slice.  So count the
	 * run's time off the CPU queue only, and allow each wait 2 ms of timer slack and rounding,
	 * and the last one cut short by the end: a loop that waited two slices (or the whole run)
	 * between wakes still fails.
	 */
	slept = f.closed_at - (run_delay() - delay);
	EXPECT_TRUE(f.wakes >= (int)(slept / 0.022) - 1);
	EXPECT_TRUE(f.wakes >= 1);
}

TEST(pid_exit_ends_the_run)
{
	struct fake f = { 0 };
	pid_t pid = fork();
	int st;

	ASSERT_TRUE(pid >= 0);
	if (!pid)
		_exit(0);
	/* not reaped while the loop runs: a zombie with no thread left has ended */
	EXPECT_EQ_INT(run(&f, (struct ks_loop_opts){ .duration = 10, .interval = 0.05, .pid = (uint32_t)pid }), 0);
	EXPECT_EQ_INT(f.why, KS_LOOP_PROCESS);
	EXPECT_TRUE(f.closed_at < 5);
	waitpid(pid, &st, 0);
	/* a process gone before the start: the run ends at once */
	{
		struct fake g = { 0 };

		EXPECT_EQ_INT(run(&g, (struct ks_loop_opts){ .duration = 10, .pid = (uint32_t)pid }), 0);
		EXPECT_EQ_INT(g.why, KS_LOOP_PROCESS);
		EXPECT_EQ_INT(g.ticks, 0);
		EXPECT_TRUE(g.closed_at < 1);
	}
}

TEST(grid_next_skips_passed_points)
{
	/* on time: the next point */
	EXPECT_EQ_INT((int)ks_loop_grid_next(100, 0.2, 1, 100.2001), 2);
	/* the engine took 0.5 s of a 0.2 s interval: 0.4 and 0.6 passed, the tick after is at 0.8 */
	EXPECT_EQ_INT((int)ks_loop_grid_next(100, 0.2, 1, 100.7), 4);
	/* exactly on a point: that one has begun, the next is after it */
	EXPECT_EQ_INT((int)ks_loop_grid_next(0, 0.25, 3, 1.0), 5);
	/* a clock still before the next point (a tick that returned at once) */
	EXPECT_EQ_INT((int)ks_loop_grid_next(5, 1, 7, 11.5), 8);
	/* far from the start, no drift: 10 ms over 1e6 points of 0.1 s */
	EXPECT_EQ_INT((int)ks_loop_grid_next(1000, 0.1, 999999, 1000 + 100000.01), 1000001);
}

TEST(ticks_stay_on_the_grid_when_waits_overrun)
{
	/* every ready takes 30 ms, so each wait for a tick ends up to 30 ms late; from the start,
	 * the lateness does not add up over 10 ticks (from the last tick, it did: ~20 ms a tick) */
	struct fake f = { .prefill = 64, .ready_sleep_s = 0.03 };

	EXPECT_EQ_INT(run(&f, (struct ks_loop_opts){ .duration = 1.05, .interval = 0.1 }), 0);
	EXPECT_EQ_INT(f.ticks, 10);
	EXPECT_EQ_INT((int)f.missed, 0);
	EXPECT_TRUE(f.min_off >= -1e-3);
	EXPECT_TRUE(f.max_off < 0.07);
}

TEST(a_long_tick_skips_and_counts_the_points_it_overran)
{
	/* the first tick (at 0.1) takes 0.25 s: 0.2 and 0.3 pass, the second tick is at 0.4 */
	struct fake f = { .sleep_s = 0.25, .sleep_tick = 1 };

	EXPECT_EQ_INT(run(&f, (struct ks_loop_opts){ .duration = 0.45, .interval = 0.1 }), 0);
	EXPECT_EQ_INT(f.ticks, 2);
	EXPECT_EQ_INT((int)f.missed, 2);
	EXPECT_TRUE(f.min_off >= -1e-3);
	/* the second window is the grid's, not a tick right after the long one */
	EXPECT_TRUE(f.min_window < 0.2);
}

TEST(add_fd_bounded)
{
	struct ks_loop l;

	ks_loop_init(&l, &(struct ks_loop_opts){ 0 });
	for (int i = 0; i < KS_LOOP_FDS; i++)
		EXPECT_EQ_INT(ks_loop_add_fd(&l, i), 0);
	EXPECT_EQ_INT(ks_loop_add_fd(&l, 99), -E2BIG);
}
