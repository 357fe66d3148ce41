/* The loader: decides hook compatibility once, by loading for real, so no collector writes its own probing. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "core/loader.h"
#include "core/log.h"

int ks_prog_select(struct bpf_object *obj, const char *hook)
{
	struct bpf_program *p;
	int n = 0;

	bpf_object__for_each_program(p, obj) {
		const char *name = bpf_program__name(p), *sep = strstr(name, "__");
		bool on;

		if (!sep)
			continue;
		on = !strcmp(sep + 2, hook);
		bpf_program__set_autoload(p, on);
		n += on;
	}
	return n;
}

void ks_prog_disable(struct bpf_object *obj, const char *base)
{
	struct bpf_program *p;
	size_t len = strlen(base);

	bpf_object__for_each_program(p, obj) {
		const char *name = bpf_program__name(p);

		if (!strncmp(name, base, len) && !strncmp(name + len, "__", 2))
			bpf_program__set_autoload(p, false);
	}
}

int ks_load_first(const char *const *hooks, int (*try)(void *ctx, const char *hook), void *ctx,
		  const char **chosen)
{
	const char *only = getenv("KSIGHT_HOOK");
	int err = -ENOENT;

	for (int i = 0; hooks[i]; i++) {
		if (only && *only && strcmp(only, hooks[i]))
			continue;
		err = try(ctx, hooks[i]);
		if (!err) {
			*chosen = hooks[i];
			p_info("hook: %s%s", hooks[i], i ? " (fallback)" : "");
			return 0;
		}
		p_info("hook %s unavailable: %s%s", hooks[i], strerror(-err), hooks[i + 1] ? ", trying next" : "");
	}
	return err;
}

unsigned long long ks_obj_missed(struct bpf_object *obj)
{
	struct bpf_program *p;
	unsigned long long n = 0;

	bpf_object__for_each_program(p, obj) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(p);

		if (fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &len))
			n += info.recursion_misses;
	}
	return n;
}

unsigned long long ks_obj_missed_since(struct bpf_object *obj, unsigned long long *seen)
{
	unsigned long long now = ks_obj_missed(obj), d = now - *seen;

	*seen = now;
	return d;
}
