/* `profile` and the --stacks modes (and serve's /debug/pprof/profile) on the run loop: the profiler of src/profile/ opened, drained each period, finished, freed. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "core/log.h"
#include "core/loop.h"
#include "drive/driver.h"
#include "drive/setup.h"
#include "profile/profile.h"

/* The profiler as an engine: samples read as they come, the halves drained each period. */
static int prof_tick(void *ctx, struct ks_loop *l)
{
	return ks_profiler_tick(ctx, l->end);
}

static int prof_ready(void *ctx, struct ks_loop *l, int fd)
{
	(void)fd;
	return ks_profiler_ready(ctx, l->end);
}

int ks_drive_profile(const struct ks_profile_opts *o, struct ks_profile_result *res)
{
	static const struct ks_engine eng = { .tick = prof_tick, .ready = prof_ready };
	/* the halves drained every period from the start of the last drain; -d, -p and the command seen within 100 ms */
	struct ks_loop_opts lo = { .duration = o->c->duration, .interval = KS_PROFILE_DRAIN_MS / 1e3, .slice = 0.1,
				   .pid = o->c->pid, .cmd = o->c->cmd };
	struct ks_profiler *p;
	struct ks_loop l;
	int err = ks_profile_start(o, res, &p);

	if (err)
		return err;
	ks_stop_install();
	fprintf(stderr, "ksight: tracing %s (%s%s)%s\n",
		o->offcpu ? "offcpu --stacks" : o->wall ? "wall --stacks" : o->syscalls ? "syscalls --stacks" : o->bio ? "biolat --stacks" : "profile",
		o->wall ? "sched_switch, sched_wakeup and cpu-clock" : res->event, o->offcpu || o->syscalls || o->bio ? "" : o->dwarf ? ", dwarf" : o->cfi ? ", cfi" : ", fp",
		ks_drive_until(o->c));
	ks_loop_init(&l, &lo);
	/* the loop starts the command once everything is attached: its first instructions are sampled */
	err = ks_loop_add_fd(&l, ks_profiler_fd(p));
	if (!err)
		err = ks_loop_run(&l, &eng, p);
	if (l.why == KS_LOOP_RUNNING) {
		ks_profiler_free(p); /* the command could not start: said why */
		return err;
	}
	if (!err)
		err = ks_profiler_finish(p, l.start);
	else if (err != -EINTR)
		p_err("cannot build the profile: %s", strerror(-err));
	ks_profiler_free(p);
	return err;
}
