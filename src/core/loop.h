/* The one run loop every driver uses: the duration, stop signals, the -p process's exit, the -- CMD's exit, interval ticks and fds to poll. */
#ifndef KS_CORE_LOOP_H
#define KS_CORE_LOOP_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

struct ks_cmd;
struct ks_loop;

/* The signal that asked the run to end (SIGINT, SIGTERM), or 0. */
extern volatile sig_atomic_t ks_stop_signal;
/*
 * Installs the SIGINT/SIGTERM handlers without SA_RESTART: a write or wait
 * that blocks is interrupted, so a run ends even when nobody reads its output.
 */
void ks_stop_install(void);

/* Milliseconds a stopping run still waits for a blocked output before it abandons the report. */
#define KS_STOP_GRACE_MS 500

/* Why a run ended: ks_loop_run sets one before the engine's close. */
enum ks_loop_end {
	KS_LOOP_RUNNING = 0,
	KS_LOOP_DURATION, /* -d passed */
	KS_LOOP_SIGNAL,	  /* a stop signal: ks_loop.sig says which */
	KS_LOOP_PROCESS,  /* the -p process exited */
	KS_LOOP_COMMAND,  /* the -- CMD exited */
	KS_LOOP_ENGINE,	  /* a callback returned KS_LOOP_DONE (a full file, a flight recording done) */
	KS_LOOP_ERROR,	  /* a callback failed: ks_loop.err */
};

/* A callback's "end the run now, normally"; 0 goes on, a negative errno ends it as an error. */
#define KS_LOOP_DONE 1

/*
 * What an engine gives the loop; every member may be NULL.  @ctx is the
 * engine's own.  The order is: open, the command started, then ticks,
 * ready and wake until the end, the command stopped (the stop signal
 * forwarded), close.  A new driver (the live view) is one more of these.
 */
struct ks_engine {
	/* Attaches; runs before the -- CMD starts and the clock starts.  An error ends the run without close. */
	int (*open)(void *ctx, struct ks_loop *l);
	/* Every interval (opts.interval), never at the end: close takes the last window. */
	int (*tick)(void *ctx, struct ks_loop *l);
	/* An fd given to ks_loop_add_fd is readable (a ring buffer's epoll fd, a signalfd). */
	int (*ready)(void *ctx, struct ks_loop *l, int fd);
	/* After every wait, whatever ended it (at most opts.slice apart): time-based checks of the engine's own. */
	int (*wake)(void *ctx, struct ks_loop *l);
	/* The end (ks_loop.why says which): the final report.  Its result is ks_loop_run's. */
	int (*close)(void *ctx, struct ks_loop *l);
};

struct ks_loop_opts {
	double duration; /* seconds from the start; 0: none */
	double interval; /* seconds between ticks, at start + k * interval; 0: no ticks */
	double slice;	 /* the longest single wait, seconds; 0: 0.2 */
	/* the next tick counts from the end of the last one (a drain period), not on the grid from the start (report windows) */
	bool tick_from_end;
	uint32_t pid;	     /* -p: the run ends when it exits; 0: none */
	struct ks_cmd *cmd;  /* -- CMD: started after open, stopped before close; NULL: none */
	volatile sig_atomic_t *stop; /* the flag a stop signal sets; NULL: ks_stop_signal */
};

#define KS_LOOP_FDS 8

/* One run.  Engines read the clock and the reason from it; the rest is the loop's. */
struct ks_loop {
	struct ks_loop_opts o;
	double start;	/* CLOCK_MONOTONIC seconds when the clock started (after open and the command's start) */
	double last;	/* when the last tick began (the start before the first) */
	double now;	/* when this tick began: a tick's window is now - last */
	double end;	/* the deadline; 0: none */
	int ticks;	/* ticks so far */
	uint64_t missed; /* grid points skipped: a tick (or the wait for one) overran them */
	enum ks_loop_end why;
	int sig;	/* the stop signal, for KS_LOOP_SIGNAL */
	int err;	/* the callback's error, for KS_LOOP_ERROR */
	int fds[KS_LOOP_FDS];
	int nfds;
	int pidfd;	/* -p: readable when the leader exits; -1 after, or without pidfd_open (closed by ks_loop_run) */
	bool gone;	/* -p: the process has ended */
};

/*
 * The grid point after @k whose time start + k' * @interval is after @now:
 * the next tick's k' (k' - k - 1 points were missed).  Grid points are
 * computed from the start, never by adding intervals, so no rounding drifts.
 */
uint64_t ks_loop_grid_next(double start, double interval, uint64_t k, double now);
/* CLOCK_MONOTONIC in seconds, the loop's clock. */
double ks_loop_now(void);
/* Polls @fd too (call it from open, or before ks_loop_run); -E2BIG past KS_LOOP_FDS. */
int ks_loop_add_fd(struct ks_loop *l, int fd);
/* Ends the run as a stop signal would (serve takes its signals on a signalfd). */
void ks_loop_stop(struct ks_loop *l, int sig);
/* Prepares @l for ks_loop_run with @o (copied); ks_loop_add_fd may follow.  Nothing to release. */
void ks_loop_init(struct ks_loop *l, const struct ks_loop_opts *o);
/*
 * Runs @e on @l (see struct ks_engine for the order).  Returns close's
 * result; without close, 0, or the callback's error for KS_LOOP_ERROR.  An
 * error from open or from starting the command is returned at once, with
 * nothing more called.
 */
int ks_loop_run(struct ks_loop *l, const struct ks_engine *e, void *ctx);

#endif
