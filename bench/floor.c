/* Benchmark floor loader: attaches empty programs on sys_enter and sys_exit (or sys_exit only) until SIGINT or SIGTERM. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "core/loader.h"
#include "core/log.h"
#include "core/tracefs.h"
#include "floor.skel.h"

struct floor_ctx {
	bool exit_only;
	struct ks_floor *skel;
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static int try_hook(void *vctx, const char *hook)
{
	struct floor_ctx *ctx = vctx;
	struct ks_floor *s = ks_floor__open();
	int err;

	if (!s)
		return -errno;
	if (!strcmp(hook, KS_HOOK_TP))
		ks_tracefs_dir(NULL);
	ks_prog_select(s->obj, hook);
	/* the one-hook floor of the count-only mode, which attaches sys_exit alone */
	if (ctx->exit_only)
		ks_prog_disable(s->obj, "sys_enter");
	err = ks_floor__load(s);
	if (!err)
		err = ks_floor__attach(s);
	if (err) {
		ks_floor__destroy(s);
		return err < 0 ? err : -EINVAL;
	}
	ctx->skel = s;
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: floor [-1|--exit-only] [--hook tp_btf|raw_tp|tp] [-v]\n"
		   "  attaches empty BPF programs on raw_syscalls sys_enter and sys_exit (only sys_exit\n"
		   "  with -1), prints 'floor: tracing ...' on stderr and waits for SIGINT or SIGTERM;\n"
		   "  without --hook the first hook that loads, in the order ksight syscalls tries them\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "exit-only", no_argument, NULL, '1' },
		{ "hook", required_argument, NULL, 'H' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *auto_hooks[] = { KS_HOOK_TP_BTF, KS_HOOK_RAW_TP, KS_HOOK_TP, NULL };
	const char *one_hook[] = { NULL, NULL };
	const char *const *hooks = auto_hooks;
	struct floor_ctx ctx = { 0 };
	struct sigaction sa = { .sa_handler = on_signal };
	sigset_t block, old;
	const char *chosen = NULL;
	int opt, err;

	while ((opt = getopt_long(argc, argv, "1vh", longopts, NULL)) != -1) {
		switch (opt) {
		case '1':
			ctx.exit_only = true;
			break;
		case 'H':
			if (strcmp(optarg, KS_HOOK_TP_BTF) && strcmp(optarg, KS_HOOK_RAW_TP) &&
			    strcmp(optarg, KS_HOOK_TP)) {
				p_err("unknown hook '%s'; use tp_btf, raw_tp or tp", optarg);
				return 2;
			}
			one_hook[0] = optarg;
			hooks = one_hook;
			break;
		case 'v':
			ks_verbose++;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	ks_log_setup_libbpf();
	/* handlers first: a signal during load or attach still ends cleanly; the
	 * signals stay blocked outside sigsuspend so none slips past the check */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &old);
	err = ks_load_first(hooks, try_hook, &ctx, &chosen);
	if (err) {
		p_err("floor: cannot load and attach: %s", strerror(-err));
		return 1;
	}
	fprintf(stderr, "floor: tracing %s (hook %s)\n", ctx.exit_only ? "sys_exit" : "sys_enter+sys_exit",
		chosen);
	while (!stop_signal)
		sigsuspend(&old);
	ks_floor__destroy(ctx.skel);
	return 0;
}
