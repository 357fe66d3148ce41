/* Benchmark loader for bench/funclat.sh: attaches the uprobe programs fl_uentry and fl_ureturn of a BPF object (the floor, ksight's funclat object or a throw-away build of it) on BINARY:FUNCTION until SIGINT or SIGTERM. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

/*
 * Only the two uprobe programs load: the object's other programs (kprobe,
 * fentry without a target, USDT) are left out.  Maps and .rodata keep the
 * object's defaults (one function, no filter, index 0 in the cookie),
 * which is what one traced function needs.
 */
int main(int argc, char **argv)
{
	static const char *const names[] = { "fl_uentry", "fl_ureturn" };
	struct bpf_link *links[2] = {};
	struct bpf_object *obj;
	struct bpf_program *p;
	int err = 0;

	if (argc != 4) {
		fprintf(stderr, "usage: funclat_load OBJECT.bpf.o BINARY FUNCTION\n");
		return 2;
	}
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj) {
		fprintf(stderr, "funclat_load: cannot open '%s': %s\n", argv[1], strerror(errno));
		return 1;
	}
	bpf_object__for_each_program(p, obj)
		bpf_program__set_autoload(p, !strcmp(bpf_program__name(p), names[0]) ||
						     !strcmp(bpf_program__name(p), names[1]));
	err = bpf_object__load(obj);
	if (err) {
		fprintf(stderr, "funclat_load: cannot load '%s': %s\n", argv[1], strerror(-err));
		goto cleanup;
	}
	for (int i = 0; i < 2; i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, o, .func_name = argv[3], .retprobe = i == 1);

		p = bpf_object__find_program_by_name(obj, names[i]);
		links[i] = p ? bpf_program__attach_uprobe_opts(p, -1, argv[2], 0, &o) : NULL;
		if (!links[i]) {
			err = -errno;
			fprintf(stderr, "funclat_load: cannot attach %s to '%s:%s': %s\n", names[i], argv[2], argv[3],
				strerror(errno));
			goto cleanup;
		}
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	fprintf(stderr, "tracing %s:%s\n", argv[2], argv[3]);
	while (!stop_signal)
		pause();
cleanup:
	for (int i = 0; i < 2; i++)
		bpf_link__destroy(links[i]);
	bpf_object__close(obj);
	return err ? 1 : 0;
}
