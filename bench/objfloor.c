/* Benchmark floor loader: attaches the empty programs of a BPF object (a bench floor object) until SIGINT or SIGTERM. */
#include <errno.h>
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
struct floor {
	const char *path;
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
	struct bpf_link *links[64];
	struct bpf_program *p;
	struct bpf_object *obj = bpf_object__open_file(f->path, NULL);
	int n = 0, err;

	if (!obj)
		return -errno;
	ks_tracefs_dir(NULL);
	ks_prog_select(obj, hook);
	err = bpf_object__load(obj);
	bpf_object__for_each_program(p, obj) {
		if (err || !bpf_program__autoload(p))
			continue;
		if (n == 64) {
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
	if (err) {
		destroy(obj, links, n);
		return err < 0 ? err : -EINVAL;
	}
	/* links stay until exit: the kernel detaches them with the process */
	f->obj = obj;
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const hooks[] = { KS_HOOK_TP_BTF, KS_HOOK_RAW_TP, KS_HOOK_TP, NULL };
	struct sigaction sa = { .sa_handler = on_signal };
	struct floor f = { 0 };
	const char *chosen = NULL;
	sigset_t block, old;
	int err;

	if (argc != 2 || argv[1][0] == '-') {
		fprintf(argc == 2 && !strcmp(argv[1], "-h") ? stdout : stderr,
			"usage: objfloor OBJECT.bpf.o\n"
			"  loads and attaches the programs of OBJECT (the first hook variant that loads;\n"
			"  KSIGHT_HOOK forces one), prints 'objfloor: tracing' on stderr, waits for SIGINT or SIGTERM\n");
		return argc == 2 && !strcmp(argv[1], "-h") ? 0 : 2;
	}
	f.path = argv[1];
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
