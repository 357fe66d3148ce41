/* Benchmark floor loader: attaches the empty block-tracepoint programs of block_floor.bpf.c until SIGINT or SIGTERM. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "core/loader.h"
#include "core/log.h"
#include "core/tracefs.h"
#include "block_floor.skel.h"

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static int try_hook(void *vctx, const char *hook)
{
	struct ks_block_floor **out = vctx, *s = ks_block_floor__open();
	int err;

	if (!s)
		return -errno;
	if (!strcmp(hook, KS_HOOK_TP))
		ks_tracefs_dir(NULL);
	ks_prog_select(s->obj, hook);
	err = ks_block_floor__load(s);
	if (!err)
		err = ks_block_floor__attach(s);
	if (err) {
		ks_block_floor__destroy(s);
		return err < 0 ? err : -EINVAL;
	}
	*out = s;
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const hooks[] = { KS_HOOK_TP_BTF, KS_HOOK_RAW_TP, KS_HOOK_TP, NULL };
	struct sigaction sa = { .sa_handler = on_signal };
	struct ks_block_floor *skel = NULL;
	const char *chosen = NULL;
	sigset_t block, old;
	int opt, err;

	while ((opt = getopt(argc, argv, "vh")) != -1) {
		if (opt == 'v') {
			ks_verbose++;
			continue;
		}
		fprintf(opt == 'h' ? stdout : stderr,
			"usage: block_floor [-v]\n"
			"  attaches empty programs on block_getrq, block_rq_issue, block_rq_requeue and\n"
			"  block_rq_complete (the first hook that loads, as ksight biolat picks it; KSIGHT_HOOK\n"
			"  forces one), prints 'block_floor: tracing' on stderr, waits for SIGINT or SIGTERM\n");
		return opt == 'h' ? 0 : 2;
	}
	if (optind < argc) {
		fprintf(stderr, "block_floor: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	ks_log_setup_libbpf();
	/* handlers first, signals blocked outside sigsuspend: none slips past the check */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &old);
	err = ks_load_first(hooks, try_hook, &skel, &chosen);
	if (err) {
		p_err("block_floor: cannot load and attach: %s", strerror(-err));
		return 1;
	}
	fprintf(stderr, "block_floor: tracing (hook %s)\n", chosen);
	while (!stop_signal)
		sigsuspend(&old);
	ks_block_floor__destroy(skel);
	return 0;
}
