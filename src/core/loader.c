/* The loader: decides hook compatibility once, by loading for real, so no collector writes its own probing. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "core/budget.h"
#include "core/filter.h"
#include "core/loader.h"
#include "core/log.h"
#include "core/names.h"
#include "core/pin.h"
#include "core/probe.h"
#include "core/sysinfo.h"
#include "core/tracefs.h"

/* The object of the variant being tried has classic tracepoint programs, which need tracefs for their ids. */
static bool classic_selected;

static bool is_classic(const struct bpf_program *p)
{
	const char *sec = bpf_program__section_name(p);

	return !strncmp(sec, "tracepoint/", 11) || !strncmp(sec, "tp/", 3);
}

int ks_prog_select(struct bpf_object *obj, const char *hook)
{
	struct bpf_program *p;
	int n = 0;

	classic_selected = false;
	bpf_object__for_each_program(p, obj) {
		const char *name = bpf_program__name(p), *sep = strstr(name, "__");
		bool on;

		if (sep) {
			on = !strcmp(sep + 2, hook);
			bpf_program__set_autoload(p, on);
			n += on;
		}
		/* collectors only disable programs after this: an upper bound */
		classic_selected |= bpf_program__autoload(p) && is_classic(p);
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

static char load_error[768];

const char *ks_load_error(void)
{
	return load_error[0] ? load_error : NULL;
}

/* Tracing programs load with CAP_SYS_ADMIN, or CAP_BPF with CAP_PERFMON (Linux 5.8+). */
static bool may_trace(void)
{
	uint64_t eff;

	if (ks_caps_effective(&eff))
		return true; /* unknown: let the error speak */
	return (eff >> KS_CAP_SYS_ADMIN & 1) || ((eff >> KS_CAP_BPF & 1) && (eff >> KS_CAP_PERFMON & 1));
}

const char *ks_priv_hint(int err)
{
	return (err == -EPERM || err == -EACCES) && !may_trace() ? "; run as root or with CAP_BPF and CAP_PERFMON" : "";
}

/* The doctor's feature for a hook, whose probe tells whether the kernel offers it at all. */
static int feature_of(const char *hook)
{
	static const struct { const char *hook; enum ks_feature f; } map[] = {
		{ KS_HOOK_FENTRY, KS_FEAT_FENTRY }, { KS_HOOK_TP_BTF, KS_FEAT_TP_BTF },
		{ KS_HOOK_RAW_TP, KS_FEAT_RAW_TP }, { KS_HOOK_TP, KS_FEAT_TP },
		{ KS_HOOK_KPROBE, KS_FEAT_KPROBE },
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(map[i].hook, hook))
			return (int)map[i].f;
	return -1;
}

/* Why @hook failed with @err, in a clause: privilege, tracefs, the kernel, or the error itself. */
static void why_not(const char *hook, int err, char *buf, size_t len)
{
	const char *name = ks_errno_name(-err);
	int f = feature_of(hook), tfs;
	char e[64];

	snprintf(e, sizeof(e), "%s%s%s", strerror(-err), name ? ", " : "", name ? name : "");
	if ((err == -EPERM || err == -EACCES) && !may_trace()) {
		snprintf(buf, len, "not permitted (%s): run as root or with CAP_BPF and CAP_PERFMON", e);
		return;
	}
	/* classic tracepoints read their event ids from tracefs */
	if ((err == -EACCES || err == -ENOENT || err == -EPERM) && (classic_selected || !strcmp(hook, KS_HOOK_TP)) &&
	    (tfs = ks_tracefs_access())) {
		ks_tracefs_explain(tfs, buf, len);
		return;
	}
	if (f >= 0 && !ks_probe((enum ks_feature)f)->ok) {
		snprintf(buf, len, "not offered by this kernel (%s; see 'ksight doctor')", e);
		return;
	}
	snprintf(buf, len, "%s", e);
}

int ks_load_first(const char *const *hooks, int (*try)(void *ctx, const char *hook), void *ctx,
		  const char **chosen)
{
	const char *only = getenv("KSIGHT_HOOK");
	char tried[512] = "", prev[320] = "";
	size_t n = 0;
	int err = -ENOENT;

	load_error[0] = 0;
	for (int i = 0; hooks[i]; i++) {
		char why[320];

		if (only && *only && strcmp(only, hooks[i]))
			continue;
		classic_selected = false;
		err = try(ctx, hooks[i]);
		if (!err) {
			*chosen = hooks[i];
			if (only && *only)
				p_info("hook: %s (KSIGHT_HOOK=%s)", hooks[i], only);
			else if (n)
				p_info("hook: %s (%s)", hooks[i], tried);
			else
				p_info("hook: %s", hooks[i]);
			return 0;
		}
		why_not(hooks[i], err, why, sizeof(why));
		p_dbg("hook %s failed: %s", hooks[i], why);
		/* "tp_btf, raw_tp: why" when the reason repeats */
		if (n && n < sizeof(tried) && !strcmp(why, prev) && n >= strlen(prev) + 2) {
			n -= strlen(prev) + 2;
			n += (size_t)snprintf(tried + n, sizeof(tried) - n, ", %s: %s", hooks[i], why);
		} else if (n < sizeof(tried)) {
			n += (size_t)snprintf(tried + n, sizeof(tried) - n, "%s%s: %s", n ? "; " : "", hooks[i], why);
		}
		snprintf(prev, sizeof(prev), "%s", why);
	}
	if (!n)
		snprintf(load_error, sizeof(load_error), "no hook variant named '%s' (KSIGHT_HOOK)", only ? only : "");
	else
		snprintf(load_error, sizeof(load_error), "cannot load and attach: %s", tried);
	return err;
}

/* One ks_load_spec call, handed through ks_load_first's void pointer. */
struct spec_run {
	const struct ks_load_spec *spec;
	void *ctx, *skel;
	const char *hook;
	bool refused;
	bool measured; /* a shared budget's measure: done at the first hook, nothing loaded */
	char pin_other[64]; /* the object whose pins are another variant's, or not ksight's */
	int load_err;	/* the load's own error, when that was the step that failed */
};

/* ks_budget_fit's sizing step: configure for the hook being tried. */
static int spec_size(void *varg)
{
	struct spec_run *a = varg;

	return a->spec->configure(a->ctx, a->skel, a->hook);
}

/*
 * configure, once, or at several limits under a shared budget.  A fit
 * calls configure many times: its -v notes are said at the last call only.
 */
static int spec_configure(struct spec_run *a, void *s, const char *hook)
{
	struct ks_budget *b = a->spec->budget ? a->spec->budget(a->ctx) : NULL;
	int verbose = ks_verbose, err;

	if (!b || !b->share)
		return a->spec->configure(a->ctx, s, hook);
	a->skel = s;
	a->hook = hook;
	ks_verbose = 0;
	err = ks_budget_fit(b, a->spec->skel->obj(s), spec_size, a);
	ks_verbose = verbose;
	a->skel = NULL;
	if (err == -EALREADY) {
		a->measured = true;
		return err;
	}
	return err ? err : a->spec->configure(a->ctx, s, hook);
}

static int spec_try(void *varg, const char *hook)
{
	struct spec_run *a = varg;
	const struct ks_skel_ops *ops = a->spec->skel;
	void *s;
	int err;

	if (a->refused)
		return -E2BIG;
	if (a->measured)
		return -EALREADY;
	s = ops->open();
	if (!s)
		return -errno;
	/* classic tracepoints find their ids in tracefs; the others need none */
	if (!strcmp(hook, KS_HOOK_TP))
		ks_tracefs_dir(NULL);
	ks_prog_select(ops->obj(s), hook);
	/* before the sizing: a shared budget's fit counts the followed set too */
	err = ks_follow_prepare(ops->obj(s));
	if (!err)
		err = spec_configure(a, s, hook);
	if (!err && a->spec->budget_check) {
		err = a->spec->budget_check(a->ctx, ops->obj(s));
		a->refused = err != 0;
	}
	if (!err) {
		err = ks_pin_prepare(ops->obj(s), hook);
		if (err == -ENOENT)
			snprintf(a->pin_other, sizeof(a->pin_other), "%s", bpf_object__name(ops->obj(s)));
	}
	if (err >= 0)
		err = a->load_err = ops->load(s);
	if (!err)
		err = ks_follow_attach(ops->obj(s));
	if (!err && a->spec->loaded)
		err = a->spec->loaded(a->ctx, s);
	if (!err)
		err = a->spec->attach ? a->spec->attach(a->ctx, s) : ops->attach(s);
	if (!err)
		err = a->spec->pin ? a->spec->pin(a->ctx, s, hook) : ks_pin_attached(ops->obj(s), ops->skeleton(s), hook);
	if (err) {
		ops->destroy(s);
		return err < 0 ? err : -EINVAL;
	}
	a->skel = s;
	return 0;
}

/* One set of programs (spec->programs): one try, and the one-line error of the step that failed. */
static int load_programs(struct spec_run *a, const char **chosen)
{
	const char *dir = ks_pin_dir();
	int err;

	load_error[0] = 0;
	err = spec_try(a, a->spec->programs);
	if (!err)
		*chosen = a->spec->programs;
	else if (a->pin_other[0])
		snprintf(load_error, sizeof(load_error),
			 "what is pinned under '%s/%s' is not these programs' as ksight pins them; run 'ksight unpin %s' first",
			 dir, a->pin_other, dir);
	else if (a->load_err)
		snprintf(load_error, sizeof(load_error), "cannot load the programs: %s%s", strerror(-err),
			 err == -EPERM ? " (needs root, or CAP_BPF and CAP_PERFMON)" : "");
	return err;
}

int ks_load_spec(const struct ks_load_spec *spec, void *ctx, void **skel, const char **chosen)
{
	struct spec_run a = { .spec = spec, .ctx = ctx };
	int err = spec->programs ? load_programs(&a, chosen) : ks_load_first(spec->hooks, spec_try, &a, chosen);

	if (!err)
		*skel = a.skel;
	return err;
}

unsigned long long ks_prog_missed(int fd)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	return fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.recursion_misses;
}

unsigned long long ks_obj_missed(struct bpf_object *obj)
{
	/* adopted: the pinned programs count, not ours (never loaded) */
	bool adopted = ks_pin_adopted(obj);
	struct bpf_program *p;
	unsigned long long n = 0;

	bpf_object__for_each_program(p, obj) {
		int fd = adopted ? ks_pin_prog_get(obj, p) : bpf_program__fd(p);

		n += ks_prog_missed(fd);
		if (adopted && fd >= 0)
			close(fd);
	}
	return n;
}

unsigned long long ks_obj_missed_since(struct bpf_object *obj, unsigned long long *seen)
{
	unsigned long long now = ks_obj_missed(obj), d = now - *seen;

	*seen = now;
	return d;
}
