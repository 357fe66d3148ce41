/* Benchmark floor loader: attaches the empty programs of a BPF object (a bench floor object) until SIGINT or SIGTERM. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "core/loader.h"
#include "core/log.h"
#include "core/tracefs.h"

/*
 * The object's programs follow ksight's naming, <base>__<hook>, so the
 * variant is chosen as the collector it stands for chooses its own;
 * programs without a variant (classic tracepoints) are always loaded.
 */
#define MAX_SKIP 8
#define MAX_LINKS 64

struct floor {
	const char *path;
	const char *skip[MAX_SKIP]; /* bases left out: a floor for a mode with fewer hooks */
	int nskip;
	struct bpf_object *obj;
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static void destroy(struct bpf_object *obj, struct bpf_link **links, int n)
{
	while (n-- > 0)
		bpf_link__destroy(links[n]);
	bpf_object__close(obj);
}

static int try_hook(void *vctx, const char *hook)
{
	struct floor *f = vctx;
	struct bpf_link *links[MAX_LINKS];
	struct bpf_program *p;
	struct bpf_object *obj = bpf_object__open_file(f->path, NULL);
	int n = 0, err;

	if (!obj)
		return -errno;
	ks_tracefs_dir(NULL);
	ks_prog_select(obj, hook);
	for (int i = 0; i < f->nskip; i++)
		ks_prog_disable(obj, f->skip[i]);
	err = bpf_object__load(obj);
	bpf_object__for_each_program(p, obj) {
		if (err || !bpf_program__autoload(p))
			continue;
		if (n == MAX_LINKS) {
			err = -E2BIG;
			break;
		}
		links[n] = bpf_program__attach(p);
		if (!links[n]) {
			err = -errno;
			break;
		}
		n++;
	}
	/* an object without a variant for this hook would measure nothing */
	if (!err && !n)
		err = -ENOENT;
	if (err) {
		destroy(obj, links, n);
		return err < 0 ? err : -EINVAL;
	}
	/* links stay until exit: the kernel detaches them with the process */
	f->obj = obj;
	return 0;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: objfloor [--hook HOOK] [--skip BASE]... [-v] OBJECT.bpf.o\n"
		     "  loads and attaches the programs of OBJECT, prints 'objfloor: tracing' on stderr and\n"
		     "  waits for SIGINT or SIGTERM; the first hook variant that loads (tp_btf, raw_tp, tp),\n"
		     "  or HOOK (KSIGHT_HOOK in the environment does the same); --skip leaves out the\n"
		     "  programs BASE__*, e.g. '--skip sys_enter' for the floor of a one-hook mode\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "hook", required_argument, NULL, 'H' },
		{ "skip", required_argument, NULL, 'x' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	static const char *const auto_hooks[] = { KS_HOOK_TP_BTF, KS_HOOK_RAW_TP, KS_HOOK_TP, NULL };
	const char *one_hook[] = { NULL, NULL };
	const char *const *hooks = auto_hooks;
	struct sigaction sa = { .sa_handler = on_signal };
	struct floor f = { 0 };
	const char *chosen = NULL;
	sigset_t block, old;
	int opt, err;

	while ((opt = getopt_long(argc, argv, "H:x:vh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'H':
			one_hook[0] = optarg;
			hooks = one_hook;
			break;
		case 'x':
			if (f.nskip == MAX_SKIP) {
				p_err("too many --skip: at most %d", MAX_SKIP);
				return 2;
			}
			f.skip[f.nskip++] = optarg;
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
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	f.path = argv[optind];
	ks_log_setup_libbpf();
	/* handlers first, signals blocked outside sigsuspend: none slips past the check */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &old);
	err = ks_load_first(hooks, try_hook, &f, &chosen);
	if (err) {
		p_err("objfloor: cannot load and attach '%s': %s", f.path, strerror(-err));
		return 1;
	}
	fprintf(stderr, "objfloor: tracing %s (hook %s)\n", f.path, chosen);
	while (!stop_signal)
		sigsuspend(&old);
	bpf_object__close(f.obj);
	return 0;
}
