/* `ksight profile` and the --stacks modes of offcpu, wall, syscalls and biolat: options, the run, and the stack profile written through src/output/ (folded, JSON, SVG flame graph, pprof). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cli/commands.h"
#include "core/budget.h"
#include "core/cmd.h"
#include "core/collector.h"
#include "drive/driver.h"
#include "drive/setup.h"
#include "core/filter.h"
#include "core/log.h"
#include "core/names.h"
#include "core/parse.h"
#include "output/output.h"
#include "profile/profile.h"

/* own long options start at 300: 256.. are the shared ones (src/core/opts.c) */
enum { O_KONLY = 300, O_UONLY, O_CALLGRAPH, O_SVG, O_PPROF, O_STACKS, O_NOINLINE, O_FOLDED, O_SYSCALL = 's' };

/* Which stacks a run counts. */
enum stack_mode { M_PROFILE, M_OFFCPU, M_SYSCALLS, M_BIO, M_WALL };

/* Rows every stacks table shares (one wording in every -h, man page and completion) */
#define OPT_SIDES                                                                                                  \
	{ "kernel-only", O_KONLY, NULL, "kernel stacks only" }, { "user-only", O_UONLY, NULL, "user stacks only" }
#define OPT_CALLGRAPH_FP_CFI                                                                                       \
	{ "call-graph", O_CALLGRAPH, "MODE",                                                                       \
	  "user stacks by fp (frame pointers, in the kernel; default) or cfi "                                       \
	  "(walk .eh_frame/.debug_frame tables in the kernel; x86-64)" }
#define OPT_FILES                                                                                                  \
	{ "svg", O_SVG, "FILE", "also write an interactive flame graph (SVG) to FILE" },                         \
	{ "pprof", O_PPROF, "FILE", "also write a gzip'd pprof profile to FILE" }

static const struct ks_optdef profile_opts[] = {
	{ "freq", 'F', "HZ", "samples per second on each CPU (default 49; 1..10000)" },
	{ "event", 'e', "EVENT", "cpu-clock (default), task-clock, cycles, instructions, cache-misses, "
				 "branch-misses; a hardware event this CPU lacks falls back to cpu-clock" },
	OPT_SIDES,
	{ "call-graph", O_CALLGRAPH, "MODE", "user stacks by fp (frame pointers, in the kernel), dwarf "
					     "(copy 16 KiB of stack, unwind with .eh_frame/.debug_frame in user space) or cfi "
					     "(walk .eh_frame/.debug_frame tables in the kernel, frame pointers where a module has "
					     "none; x86-64, where it is the default; fp elsewhere)" },
	{ "no-inline", O_NOINLINE, NULL, "no frames for calls the compiler inlined (spares reading DWARF)" },
	OPT_FILES,
	{ 0 },
};

/* the words completion offers: --call-graph's modes, -e's events */
static const struct ks_opt_values profile_values[] = {
	{ "call-graph", "fp|dwarf|cfi" },
	{ "event", "cpu-clock|task-clock|cycles|instructions|cache-misses|branch-misses" },
	{ 0 },
};

static const struct ks_opt_values stacks_values[] = {
	{ "call-graph", "fp|cfi" },
	{ 0 },
};

static const struct ks_optdef offcpu_opts[] = {
	{ "stacks", O_STACKS, NULL, "off-CPU time by blocking stack (without it: the offcpu collector's rows)" },
	OPT_SIDES,
	OPT_CALLGRAPH_FP_CFI,
	OPT_FILES,
	{ 0 },
};

static const struct ks_cmd_spec offcpu_spec = {
	.name = "offcpu",
	.summary = "With --stacks: off-CPU time, from a blocking switch out to the switch back in, by the "
		   "stacks it blocked in (kernel; user by frame pointers, or .eh_frame tables with --call-graph "
		   "cfi); written as folded stacks in "
		   "nanoseconds (default), JSON (-j), an SVG flame graph and pprof.",
	.common = KS_O_DURATION | KS_O_FILTERS | KS_O_JSON | KS_O_OUTPUT | KS_O_MEMORY | KS_O_CMD,
	.opts = offcpu_opts,
	.values = stacks_values,
};

static const struct ks_optdef wall_opts[] = {
	{ "stacks", O_STACKS, NULL, "the time by state and stack (without it: the wall collector's rows)" },
	{ "freq", 'F', "HZ", "on-CPU samples per second on each CPU (default 49; 1..10000)" },
	OPT_SIDES,
	OPT_CALLGRAPH_FP_CFI,
	{ "folded", O_FOLDED, "FILE", "write the folded stacks to FILE (as -o does)" },
	OPT_FILES,
	{ 0 },
};

static const struct ks_cmd_spec wall_spec = {
	.name = "wall",
	.summary = "With --stacks: each thread's time by the state `wall` tells ([cpu_user], [cpu_sys] sampled at -F HZ; "
		   "[runnable], [throttled], [blkio], [uninterruptible], [lock], [netpipe], [sleep], [other_sleep], [other] "
		   "timed from the switch out, under the stacks taken then) as the root frame, all in nanoseconds; written "
		   "as folded stacks (default), JSON (-j), an SVG flame graph and pprof.",
	.common = KS_O_DURATION | KS_O_FILTERS | KS_O_JSON | KS_O_OUTPUT | KS_O_MEMORY | KS_O_CMD,
	.opts = wall_opts,
	.values = stacks_values,
};

static const struct ks_optdef syscalls_opts[] = {
	{ "stacks", O_STACKS, NULL, "time in syscalls by the caller's stack (without it: the syscalls collector's rows)" },
	{ "syscall", O_SYSCALL, "NAME", "only this syscall, e.g. read (default: every one)" },
	{ "kernel", O_KONLY, NULL, "also the kernel stack at entry (the syscall entry path)" },
	OPT_CALLGRAPH_FP_CFI,
	OPT_FILES,
	{ 0 },
};

static const struct ks_cmd_spec syscalls_spec = {
	.name = "syscalls",
	.summary = "With --stacks: time in syscalls (sys_enter to sys_exit), by the caller's user stack (frame "
		   "pointers, or .eh_frame tables with --call-graph cfi) ending in the syscall's name; written as folded stacks in nanoseconds (default), "
		   "JSON (-j), an SVG flame graph and pprof.",
	.common = KS_O_DURATION | KS_O_FILTERS | KS_O_JSON | KS_O_OUTPUT | KS_O_MEMORY | KS_O_CMD,
	.opts = syscalls_opts,
	.values = stacks_values,
};

static const struct ks_optdef biolat_opts[] = {
	{ "stacks", O_STACKS, NULL, "bytes submitted by the submitter's stack (without it: the biolat collector's rows)" },
	OPT_SIDES,
	OPT_CALLGRAPH_FP_CFI,
	OPT_FILES,
	{ 0 },
};

static const struct ks_cmd_spec biolat_spec = {
	.name = "biolat",
	.summary = "With --stacks: bytes submitted to the block layer (block_bio_queue), by the submitter's "
		   "stacks (kernel; user by frame pointers, or .eh_frame tables with --call-graph cfi); written "
		   "as folded stacks in bytes (default), JSON "
		   "(-j), an SVG flame graph and pprof.",
	.common = KS_O_DURATION | KS_O_FILTERS | KS_O_JSON | KS_O_OUTPUT | KS_O_MEMORY | KS_O_CMD,
	.opts = biolat_opts,
	.values = stacks_values,
};

static const struct ks_cmd_spec profile_spec = {
	.name = "profile",
	.summary = "On-CPU stacks sampled at -F HZ, counted by process, kernel stack and user stack; written "
		   "as folded stacks (default), JSON (-j), an SVG flame graph and pprof.",
	.common = KS_O_DURATION | KS_O_FILTERS | KS_O_JSON | KS_O_OUTPUT | KS_O_MEMORY | KS_O_CMD,
	.opts = profile_opts,
	.values = profile_values,
};

struct cli {
	struct ks_profile_opts o;
	enum stack_mode mode;
	bool konly, uonly;
	bool call_graph; /* --call-graph given */
	const char *svg, *pprof, *folded;
};

static int on_opt(void *ctx, int id, const char *arg)
{
	struct cli *cl = ctx;
	uint64_t v;

	switch (id) {
	case 'F':
		if (ks_parse_u64(arg, 1, 10000, &v)) {
			p_err("invalid frequency '%s': expected 1 to 10000 samples per second", KS_ESC(arg));
			return -EINVAL;
		}
		cl->o.hz = (uint32_t)v;
		return 0;
	case 'e':
		if (!ks_profile_event_known(arg)) {
			p_err("unknown event '%s': expected cpu-clock, task-clock, cycles, instructions, "
			      "cache-misses or branch-misses", KS_ESC(arg));
			return -EINVAL;
		}
		cl->o.event = arg;
		return 0;
	case O_KONLY:
		/* syscalls' --kernel: the kernel stack too (its default is the user stack alone) */
		if (cl->mode == M_SYSCALLS)
			cl->o.kernel = true;
		else
			cl->konly = true;
		return 0;
	case O_SYSCALL: {
		int nr = ks_syscall_nr(arg);

		if (nr < 0) {
			p_err("unknown syscall '%s'; e.g. read, write, futex", KS_ESC(arg));
			return -EINVAL;
		}
		cl->o.syscall_nr = nr;
		return 0;
	}
	case O_UONLY:
		cl->uonly = true;
		return 0;
	case O_CALLGRAPH:
		if (strcmp(arg, "fp") && strcmp(arg, "dwarf") && strcmp(arg, "cfi")) {
			p_err("invalid --call-graph '%s': expected fp, dwarf or cfi", KS_ESC(arg));
			return -EINVAL;
		}
		cl->call_graph = true;
		cl->o.dwarf = !strcmp(arg, "dwarf");
		cl->o.cfi = !strcmp(arg, "cfi");
		/* dwarf copies the stack at a sample and unwinds it then: the interval modes keep stacks, not copies */
		if (cl->o.dwarf && cl->mode != M_PROFILE) {
			p_err("--call-graph dwarf is profile's only: stacks by interval take fp or cfi");
			return -EINVAL;
		}
#if !defined(__x86_64__)
		if (cl->o.cfi) {
			/* the tables' rules and the walker are x86-64's (rsp, rbp, the return address at CFA - 8) */
			p_err("--call-graph cfi is available on x86-64 only: use dwarf here");
			return -EINVAL;
		}
#endif
		return 0;
	case O_NOINLINE:
		cl->o.no_inline = true;
		return 0;
	case O_SVG:
		cl->svg = arg;
		return 0;
	case O_PPROF:
		cl->pprof = arg;
		cl->o.pprof = true;
		return 0;
	case O_STACKS:
		return 0;
	case O_FOLDED:
		cl->folded = arg;
		return 0;
	}
	return -EINVAL;
}

/* Renders with @write into memory and writes it all through @sink. */
static int emit(struct ks_sink *sink, const struct ks_profile_json_opts *json,
		int (*swrite)(const struct ks_stacks *, FILE *), const struct ks_profile_result *res)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	int err;

	if (!m)
		return -errno;
	err = json ? ks_write_profile_json(res, json, m) : swrite(&res->st, m);
	if (fclose(m) && !err)
		err = -ENOMEM;
	if (!err)
		err = ks_sink_start(sink);
	if (!err)
		err = ks_sink_write(sink, buf, len, KS_STOP_GRACE_MS);
	free(buf);
	return err;
}

static int run_stacks(const struct ks_cmd_spec *spec, enum stack_mode mode, int argc, char **argv, struct ks_cmd *cmd)
{
	/* syscalls: the kernel part is the entry path, the same for every call: left out unless asked */
	struct cli cl = { .mode = mode,
			  .o = { .hz = 49, .kernel = mode != M_SYSCALLS, .user = true, .offcpu = mode == M_OFFCPU,
				 .wall = mode == M_WALL, .syscalls = mode == M_SYSCALLS, .syscall_nr = -1, .bio = mode == M_BIO } };
	bool offcpu = mode != M_PROFILE;
	struct ks_sink out = { .fd = -1 }, svg = { .fd = -1 }, pprof = { .fd = -1 };
	struct ks_profile_result res;
	struct ks_profile_json_opts json;
	struct ks_common c;
	bool started = false;
	int err, ret = 1;

	ks_common_init(&c);
	err = ks_opts_parse_noargs(spec, argc, argv, &c, on_opt, &cl);
	if (err)
		return err == KS_OPTS_HELP ? 0 : 2;
	if (cl.konly && cl.uonly) {
		p_err("--kernel-only and --user-only exclude each other");
		return 2;
	}
	if (cl.konly && (cl.o.dwarf || cl.o.cfi)) {
		p_err("--call-graph %s unwinds user stacks: it makes no sense with --kernel-only", cl.o.dwarf ? "dwarf" : "cfi");
		return 2;
	}
#if defined(__x86_64__)
	/*
	 * profile's default: the CFI tables, so that a Debian binary or libc (no
	 * frame pointers) gives more than its leaf; a module without tables is
	 * walked by frame pointers.  The interval modes keep fp: their stacks are
	 * taken at every switch or syscall, where a walk costs per event.
	 */
	if (mode == M_PROFILE && !cl.call_graph && !cl.konly)
		cl.o.cfi = true;
#endif
	if (ks_verbose && !cl.konly)
		p_info("user stacks by %s%s", cl.o.dwarf ? "dwarf" : cl.o.cfi ? "cfi (per module below: its tables, or frame pointers)" : "fp",
		       cl.call_graph ? "" : " (the default)");
	if (mode != M_SYSCALLS)
		cl.o.kernel = !cl.uonly;
	cl.o.user = !cl.konly;
	cl.o.c = &c;
	/* -- CMD: forked at its gate now, for the filter to follow its cgroup */
	err = ks_drive_spawn(&c, cmd);
	if (err)
		return err;
	if (ks_filter_build(&c, &cl.o.filter))
		return 2;
	if (cl.folded && c.output) {
		p_err("--folded and -o name the same output: give one");
		return 2;
	}
	if (cl.folded)
		c.output = cl.folded;
	if (ks_drive_sink(&out, c.output))
		return 1;
	if ((cl.svg && ks_drive_sink(&svg, cl.svg)) || (cl.pprof && ks_drive_sink(&pprof, cl.pprof)))
		goto close;
	err = ks_drive_profile(&cl.o, &res);
	started = !err;
	json = (struct ks_profile_json_opts){ .collector = (const char *[]){ "profile", "offcpu", "syscalls", "biolat", "wall" }[mode],
					      .hz = cl.o.hz, .dwarf = cl.o.dwarf, .cfi = cl.o.cfi,
					      .offcpu = mode == M_OFFCPU, .cmd = cl.o.c->cmd };
	ks_cmd_say(c.cmd);
	if (!err) {
		ks_stacks_sort(&res.st);
		if (ks_verbose && !offcpu)
			p_info("%llu samples of %s at %u Hz in %.2f s, %zu stacks; user unwinding %.0f ns/sample",
			       (unsigned long long)res.stats.samples, res.event, cl.o.hz, res.duration_s, res.st.n,
			       res.unwound ? (double)res.unwind_ns / res.unwound : 0.0);
		if (ks_verbose && cl.o.cfi) {
			const struct ks_prof_stats *s = &res.stats;
			const struct ks_cfi_stats *cs = &res.cfi;

			p_info("cfi: %llu walks, %.1f frames each (%llu by frame pointers, %llu of them in no mapping; %llu signal "
			       "frames crossed); stops: %llu outermost, %llu "
			       "process not loaded yet, %llu no mapping, %llu no row, %llu unsupported rule, %llu read fault, "
			       "%llu depth cap",
			       (unsigned long long)s->cfi_samples, s->cfi_samples ? (double)s->cfi_frames / s->cfi_samples : 0.0,
			       (unsigned long long)s->cfi_fp_frames, (unsigned long long)s->cfi_unmapped_frames,
			       (unsigned long long)s->cfi_signal_frames,
			       (unsigned long long)s->cfi_end,
			       (unsigned long long)s->cfi_no_proc, (unsigned long long)s->cfi_no_map,
			       (unsigned long long)s->cfi_no_row, (unsigned long long)s->cfi_unsup,
			       (unsigned long long)s->cfi_fault, (unsigned long long)s->cfi_depth);
			p_info("cfi: %llu processes (%llu lost, %llu maps read again), %llu modules (%llu from the cache, %llu "
			       "without CFI), %llu rows of %llu, %.1f ms compiling and loading",
			       (unsigned long long)cs->procs, (unsigned long long)cs->procs_lost,
			       (unsigned long long)s->cfi_reread, (unsigned long long)cs->modules,
			       (unsigned long long)cs->modules_cached, (unsigned long long)cs->modules_none, (unsigned long long)cs->rows,
			       (unsigned long long)cs->rows_cap, cs->compile_ns / 1e6);
		}
		if (cl.o.cfi && (res.cfi.modules_fp || res.cfi.maps_lost))
			p_warn("cfi: %llu modules' tables (%llu rows) did not fit and are walked by frame pointers, %llu "
			       "mappings past %d a process are not walked (raise --max-memory)",
			       (unsigned long long)res.cfi.modules_fp, (unsigned long long)res.cfi.rows_dropped,
			       (unsigned long long)res.cfi.maps_lost, KS_CFI_MAPS);
		if (res.stats.map_errors)
			p_warn("%llu map updates failed (processes not announced, intervals left open)",
			       (unsigned long long)res.stats.map_errors);
		if (res.stats.off_unseen_in)
			p_warn("lost: %llu off-CPU intervals whose switch in the kernel did not report",
			       (unsigned long long)res.stats.off_unseen_in);
		if (res.stats.kstack_lost + res.stats.ustack_lost + res.stats.counts_full + res.stats.ring_lost)
			p_warn("lost: %llu kernel stacks, %llu user stacks, %llu samples to a full count map, "
			       "%llu to a full ring buffer (raise --max-memory)",
			       (unsigned long long)res.stats.kstack_lost, (unsigned long long)res.stats.ustack_lost,
			       (unsigned long long)res.stats.counts_full, (unsigned long long)res.stats.ring_lost);
		err = emit(&out, c.json ? &json : NULL, ks_write_folded, &res);
		if (!err && cl.svg)
			err = emit(&svg, NULL, ks_write_svg, &res);
		if (!err && cl.pprof)
			err = emit(&pprof, NULL, ks_write_pprof, &res);
		if (err)
			p_err("cannot write the profile: %s", strerror(-err));
		else
			ret = 0;
	}
	ks_profile_result_free(&res);
close:
	if (out.own)
		ks_sink_close(&out, started);
	if (svg.own)
		ks_sink_close(&svg, started);
	if (pprof.own)
		ks_sink_close(&pprof, started);
	return ret;
}

/* run_stacks, then the command of -- CMD released whatever the return: one still at its gate ends without running */
static int stacks(const struct ks_cmd_spec *spec, enum stack_mode mode, int argc, char **argv)
{
	struct ks_cmd cmd = { .pid = 0 };
	int ret = run_stacks(spec, mode, argc, argv, &cmd);

	ks_cmd_release(&cmd);
	return ret;
}

int cmd_profile(int argc, char **argv)
{
	return stacks(&profile_spec, M_PROFILE, argc, argv);
}

/* `NAME --stacks` is this command; plain NAME is the collector, run as every collector is. */
static int stacks_or_collector(const struct ks_cmd_spec *spec, enum stack_mode mode, int argc, char **argv)
{
	const struct ks_collector *col = ks_collector_find(spec->name);

	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--stacks"))
			return stacks(spec, mode, argc, argv);
	return col ? ks_collector_run(col, argc, argv) : 2;
}

int cmd_offcpu(int argc, char **argv)
{
	return stacks_or_collector(&offcpu_spec, M_OFFCPU, argc, argv);
}

int cmd_syscalls(int argc, char **argv)
{
	return stacks_or_collector(&syscalls_spec, M_SYSCALLS, argc, argv);
}

int cmd_biolat(int argc, char **argv)
{
	return stacks_or_collector(&biolat_spec, M_BIO, argc, argv);
}

int cmd_wall(int argc, char **argv)
{
	return stacks_or_collector(&wall_spec, M_WALL, argc, argv);
}
