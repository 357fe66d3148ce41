/* The doctor's judgement (facts and probe results into OK/WARN/MISSING, impact, fix) and its two writers. */
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include "core/checks.h"
#include "core/names.h"

const char *ks_status_name(enum ks_status s)
{
	switch (s) {
	case KS_ST_OK: return "OK";
	case KS_ST_WARN: return "WARN";
	default: return "MISSING";
	}
}

void ks_checks_init(struct ks_checks *l, const char *kernel)
{
	memset(l, 0, sizeof(*l));
	snprintf(l->kernel, sizeof(l->kernel), "%s", kernel ? kernel : "");
}

struct ks_check *ks_checks_add(struct ks_checks *l, const char *name, enum ks_status st, const char *fmt, ...)
{
	struct ks_check *c;
	va_list ap;

	if (l->n >= KS_MAX_CHECKS) {
		errno = ENOSPC;
		return NULL;
	}
	c = &l->c[l->n++];
	memset(c, 0, sizeof(*c));
	c->name = name;
	c->status = st;
	va_start(ap, fmt);
	vsnprintf(c->value, sizeof(c->value), fmt, ap);
	va_end(ap);
	return c;
}

#define SETTER(fn, field)                                           \
	void fn(struct ks_check *c, const char *fmt, ...)           \
	{                                                           \
		va_list ap;                                         \
		va_start(ap, fmt);                                  \
		vsnprintf(c->field, sizeof(c->field), fmt, ap);     \
		va_end(ap);                                         \
	}
SETTER(ks_check_set_impact, impact)
SETTER(ks_check_set_fix, fix)
SETTER(ks_check_set_detail, detail)

const struct ks_check *ks_checks_find(const struct ks_checks *l, const char *name)
{
	for (int i = 0; i < l->n; i++)
		if (!strcmp(l->c[i].name, name))
			return &l->c[i];
	return NULL;
}

/* ---- judgement ---- */

/* Allowed to load tracing programs: CAP_SYS_ADMIN, or CAP_BPF with CAP_PERFMON (Linux 5.8+). */
static bool privileged(const struct ks_sysinfo *si)
{
	return ks_sysinfo_has_cap(si, KS_CAP_SYS_ADMIN) ||
	       (ks_sysinfo_has_cap(si, KS_CAP_BPF) && ks_sysinfo_has_cap(si, KS_CAP_PERFMON));
}

static const char *err_name(int err)
{
	const char *n = ks_errno_name(err < 0 ? -err : err);

	return n ? n : "?";
}

/* "Operation not permitted (EPERM)" */
static void err_text(int err, char *buf, size_t len)
{
	snprintf(buf, len, "%s (%s)", strerror(err < 0 ? -err : err), err_name(err));
}

#define PRIV_FIX "run as root, or give ksight CAP_BPF and CAP_PERFMON"

/*
 * Sets the fix for something the kernel build decides: names the options
 * of @need the config says are off.  When the config is readable and has
 * them all, the kernel is not the cause, and no rebuild is suggested: a
 * refusal (@err EPERM/EACCES) is a permission, else the detail line says
 * what failed.  Only without a readable config is @otherwise (which may
 * name the options) given.
 */
static void fix_config(struct ks_check *c, const struct ks_sysinfo *si, const enum ks_kconfig *need, int n,
		       int err, const char *otherwise)
{
	char off[KS_CHECK_TEXT] = "", on[KS_CHECK_TEXT] = "";
	size_t len = 0, olen = 0;

	for (int i = 0; i < n; i++) {
		if (si->kconfig[need[i]] == 'n')
			len += (size_t)snprintf(off + len, sizeof(off) - len, "%s%s", len ? ", " : "",
						ks_kconfig_name(need[i]));
		else if (olen < sizeof(on))
			olen += (size_t)snprintf(on + olen, sizeof(on) - olen, "%s%s=%c", olen ? ", " : "",
						 ks_kconfig_name(need[i]), si->kconfig[need[i]]);
	}
	if (len)
		ks_check_set_fix(c, "the kernel is built without %s (%s): use one built with %s (distribution kernels are)",
				 off, si->kconfig_src, n > 1 ? "them" : "it");
	else if (si->kconfig_src[0] && (err == -EPERM || err == -EACCES))
		ks_check_set_fix(c, "the kernel has it (%s in %s) but refused this process: run as root (CAP_SYS_ADMIN)",
				 on, si->kconfig_src);
	else if (si->kconfig_src[0])
		ks_check_set_fix(c, "the kernel is built with it (%s in %s), yet the probe failed: see the detail (-v)",
				 on, si->kconfig_src);
	else
		ks_check_set_fix(c, "%s", otherwise);
}

struct hook {
	enum ks_feature f;
	const char *target; /* what the probe loads or attaches to, for the value line */
};

static const struct hook hooks[] = {
	{ KS_FEAT_FENTRY, "fentry/fexit: attached to vfs_read" },
	{ KS_FEAT_TP_BTF, "attached to sched_switch" },
	{ KS_FEAT_RAW_TP, "attached to sched_switch" },
	{ KS_FEAT_TP, "attached to sched:sched_switch" },
	{ KS_FEAT_KPROBE, "attached to vfs_read" },
	{ KS_FEAT_UPROBE, "attached to a function of ksight" },
	{ KS_FEAT_PERF_EVENT, "attached to a CPU-clock software event" },
	{ KS_FEAT_RINGBUF, "map created" },
	{ KS_FEAT_TASK_STORAGE, "map created" },
};

/* Impact and fix of a missing hook or map type, given what else works. */
static void hook_missing(struct ks_check *c, const struct ks_doctor_input *in, enum ks_feature f)
{
	const struct ks_sysinfo *si = in->si;
	bool fentry = in->probe[KS_FEAT_FENTRY].ok, kprobe = in->probe[KS_FEAT_KPROBE].ok;
	bool tp_btf = in->probe[KS_FEAT_TP_BTF].ok;
	bool tps = tp_btf || in->probe[KS_FEAT_RAW_TP].ok || in->probe[KS_FEAT_TP].ok;

	switch (f) {
	case KS_FEAT_FENTRY: {
		static const enum ks_kconfig need[] = { KS_KCFG_FUNCTION_TRACER, KS_KCFG_FTRACE_DIRECT_CALLS };

		ks_check_set_impact(c, "no BPF trampolines: %s%s",
				    kprobe ? "kernel functions are traced with kprobes instead, at more cost per call"
					   : "kernel functions cannot be traced at all (no kprobes either)",
				    tps ? "; collectors use their tracepoint hooks" : "");
		fix_config(c, si, need, 2, in->probe[f].err,
			   "use a kernel with BPF trampolines: Linux 5.5+ with CONFIG_FUNCTION_TRACER=y and "
			   "CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS=y");
		/*
		 * the options are on and CAP_BPF with CAP_PERFMON suffice for
		 * fentry: a kernel that still refuses has no trampolines on
		 * this architecture or build (this refusal is EPERM, even for root)
		 */
		if (si->kconfig_src[0] && !strstr(c->fix, "without") && privileged(si))
			ks_check_set_fix(c, "the config enables trampolines, yet this kernel refuses them: use a stock "
					    "distribution kernel (Linux 5.5+ on x86-64, 6.0+ on arm64)");
		break;
	}
	case KS_FEAT_KPROBE: {
		static const enum ks_kconfig need[] = { KS_KCFG_KPROBES, KS_KCFG_KPROBE_EVENTS };

		ks_check_set_impact(c, "%s", fentry ? "no kprobe fallback; fentry covers kernel functions"
						    : "kernel functions cannot be traced (funclat needs fentry or kprobes)");
		fix_config(c, si, need, 2, in->probe[f].err, "use a kernel with CONFIG_KPROBES=y and CONFIG_KPROBE_EVENTS=y");
		break;
	}
	case KS_FEAT_TP_BTF: {
		static const enum ks_kconfig need[] = { KS_KCFG_DEBUG_INFO_BTF };

		ks_check_set_impact(c, "collectors fall back to raw_tp or classic tracepoints, at a little more cost per event");
		fix_config(c, si, need, 1, in->probe[f].err, "use Linux 5.5+ with kernel BTF (CONFIG_DEBUG_INFO_BTF=y)");
		break;
	}
	case KS_FEAT_RAW_TP: {
		static const enum ks_kconfig need[] = { KS_KCFG_BPF_EVENTS };

		ks_check_set_impact(c, "%s", tp_btf ? "no raw tracepoint fallback (tp_btf is used)"
						    : "collectors fall back to classic tracepoints, the slowest hook");
		fix_config(c, si, need, 1, in->probe[f].err, "use Linux 4.17+ with CONFIG_BPF_EVENTS=y");
		break;
	}
	case KS_FEAT_TP: {
		static const enum ks_kconfig need[] = { KS_KCFG_BPF_EVENTS };

		ks_check_set_impact(c, "'ksight record -e SUBSYS:EVENT' and the classic-tracepoint fallback are unavailable");
		if (!si->tracefs[0])
			ks_check_set_fix(c, "tracepoint ids come from tracefs, which is not mounted: see the tracefs line");
		else if (si->tracefs_mode && !si->tracefs_readable)
			ks_check_set_fix(c, "tracepoint ids come from tracefs, which this process cannot read: see the "
					    "tracefs line");
		else
			fix_config(c, si, need, 1, in->probe[f].err, "use a kernel with CONFIG_BPF_EVENTS=y");
		break;
	}
	case KS_FEAT_UPROBE: {
		static const enum ks_kconfig need[] = { KS_KCFG_UPROBE_EVENTS };

		/* uprobe_multi links are not refused where perf-event uprobes are (6.18 without CAP_SYS_ADMIN) */
		ks_check_set_impact(c, "%s", in->probe[KS_FEAT_UPROBE_MULTI].ok
						     ? "USDT probes cannot be traced; functions in programs and libraries "
						       "still can (funclat attaches them with uprobe_multi)"
						     : "functions in programs and libraries cannot be traced (funclat on user space)");
		fix_config(c, si, need, 1, in->probe[f].err, "use a kernel with CONFIG_UPROBES=y and CONFIG_UPROBE_EVENTS=y");
		break;
	}
	case KS_FEAT_PERF_EVENT: {
		static const enum ks_kconfig need[] = { KS_KCFG_PERF_EVENTS };

		ks_check_set_impact(c, "CPU sampling (ksight profile) is unavailable");
		fix_config(c, si, need, 1, in->probe[f].err,
			   "use a kernel with CONFIG_PERF_EVENTS=y; in a container, allow perf_event_open in its "
			   "seccomp profile");
		break;
	}
	case KS_FEAT_RINGBUF:
		ks_check_set_impact(c, "event streams (ksight record, per-event collectors) cannot run");
		ks_check_set_fix(c, "BPF ring buffers need Linux 5.8 or later");
		break;
	case KS_FEAT_TASK_STORAGE:
		ks_check_set_impact(c, "collectors that keep per-thread state in task storage cannot load");
		ks_check_set_fix(c, "task storage for tracing programs needs Linux 5.11 or later");
		break;
	default:
		break;
	}
	/* a refusal for want of privilege hides what the kernel can do: fix that first */
	if ((in->probe[f].err == -EPERM || in->probe[f].err == -EACCES) && !privileged(si))
		ks_check_set_fix(c, PRIV_FIX);
}

static int add_btf(struct ks_checks *l, const struct ks_doctor_input *in)
{
	static const enum ks_kconfig need[] = { KS_KCFG_DEBUG_INFO_BTF };
	const struct ks_probe_result *r = &in->probe[KS_FEAT_BTF];
	struct ks_check *c;
	char e[96];

	c = ks_checks_add(l, "btf", r->ok ? KS_ST_OK : KS_ST_MISSING, "%s",
			  r->ok ? "kernel BTF loaded (/sys/kernel/btf/vmlinux)" : "no kernel BTF");
	if (!c)
		return -ENOSPC;
	if (r->ok) {
		ks_check_set_detail(c, "parsed /sys/kernel/btf/vmlinux");
	} else {
		err_text(r->err, e, sizeof(e));
		ks_check_set_detail(c, "loading vmlinux BTF failed: %s", e);
		ks_check_set_impact(c, "CO-RE programs cannot be relocated: no collector can load");
		fix_config(c, in->si, need, 1, r->err, "use a kernel built with CONFIG_DEBUG_INFO_BTF=y");
	}
	return 0;
}

/*
 * biolat follows a request to its disk and a bio to its block device with
 * no CO-RE fallback: request_queue.disk came with Linux 5.15 (commit
 * d152c682f03c, "block: add an explicit ->disk backpointer to the
 * request_queue"), bio.bi_bdev with 5.12 (commit 309dca309fc3, "block:
 * store a block_device pointer in struct bio").
 */
const struct ks_btf_need ks_btf_needs[2] = {
	{ "biolat", "biolat_btf", "request_queue", "disk", "5.15" },
	{ "biolat", "biolat_btf", "bio", "bi_bdev", "5.12" },
};

/* The release against the oldest kernel ksight supports, and what a collector needs that the BTF lacks. */
static int add_kernel_min(struct ks_checks *l, const struct ks_doctor_input *in)
{
	const struct ks_sysinfo *si = in->si;
	bool known = si->kernel_major > 0;
	bool old = known && (si->kernel_major < KS_KERNEL_MIN_MAJOR ||
			     (si->kernel_major == KS_KERNEL_MIN_MAJOR && si->kernel_minor < KS_KERNEL_MIN_MINOR));
	struct ks_check *c;

	if (!known)
		c = ks_checks_add(l, "kernel_min", KS_ST_WARN, "release '%s' does not parse; minimum %d.%d",
				  si->release, KS_KERNEL_MIN_MAJOR, KS_KERNEL_MIN_MINOR);
	else
		c = ks_checks_add(l, "kernel_min", old ? KS_ST_WARN : KS_ST_OK, "%d.%d %s minimum %d.%d",
				  si->kernel_major, si->kernel_minor, old ? "<" : ">=", KS_KERNEL_MIN_MAJOR,
				  KS_KERNEL_MIN_MINOR);
	if (!c)
		return -ENOSPC;
	if (old) {
		ks_check_set_impact(c, "collectors may fail to load: biolat reads request_queue.disk and bio.bi_bdev "
				       "(Linux 5.15) with no fallback");
		ks_check_set_fix(c, "run on Linux %d.%d or later", KS_KERNEL_MIN_MAJOR, KS_KERNEL_MIN_MINOR);
	}
	if (!in->btf_needs_known)
		return 0;
	for (size_t i = 0; i < sizeof(ks_btf_needs) / sizeof(ks_btf_needs[0]); i++) {
		const struct ks_btf_need *n = &ks_btf_needs[i];

		if (in->btf_needs[i])
			continue;
		if (ks_checks_find(l, n->check))
			continue; /* one line a collector, naming its first missing member */
		c = ks_checks_add(l, n->check, KS_ST_MISSING, "no member %s.%s in the kernel BTF", n->type, n->member);
		if (!c)
			return -ENOSPC;
		ks_check_set_impact(c, "%s cannot load on this kernel", n->collector);
		ks_check_set_fix(c, "%s.%s came with Linux %s: run %s on a newer kernel", n->type, n->member, n->since,
				 n->collector);
	}
	return 0;
}

static int add_hooks(struct ks_checks *l, const struct ks_doctor_input *in)
{
	for (size_t i = 0; i < sizeof(hooks) / sizeof(hooks[0]); i++) {
		enum ks_feature f = hooks[i].f;
		const struct ks_probe_result *r = &in->probe[f];
		struct ks_check *c;
		char e[96];

		if (r->ok)
			c = ks_checks_add(l, ks_feature_name(f), KS_ST_OK, "%s", hooks[i].target);
		else if (r->off)
			c = ks_checks_add(l, ks_feature_name(f), KS_ST_MISSING, "turned off by KSIGHT_FEATURES_OFF");
		else
			c = ks_checks_add(l, ks_feature_name(f), KS_ST_MISSING, "not available (%s failed)",
					  r->step ? r->step : "probe");
		if (!c)
			return -ENOSPC;
		if (r->ok) {
			ks_check_set_detail(c, "%s", f == KS_FEAT_RINGBUF || f == KS_FEAT_TASK_STORAGE
							     ? "probe created the map"
							     : "probe loaded and attached");
			continue;
		}
		if (r->off) {
			ks_check_set_detail(c, "not probed: KSIGHT_FEATURES_OFF names it (a test of the fallbacks)");
			continue;
		}
		err_text(r->err, e, sizeof(e));
		ks_check_set_detail(c, "probe step '%s' failed: %s", r->step ? r->step : "?", e);
		hook_missing(c, in, f);
	}
	return 0;
}

static int add_caps(struct ks_checks *l, const struct ks_sysinfo *si)
{
	struct ks_check *c;

	if (!si->caps_known) {
		c = ks_checks_add(l, "capabilities", KS_ST_WARN, "unknown (no CapEff in /proc/self/status)");
		if (!c)
			return -ENOSPC;
		ks_check_set_impact(c, "cannot tell whether BPF programs may be loaded; the hook probes above decide");
		ks_check_set_fix(c, "run as root");
		return 0;
	}
	/* before 5.11 BPF maps are charged to RLIMIT_MEMLOCK, which CAP_SYS_RESOURCE lets libbpf raise */
	bool memlock = si->kernel_major && (si->kernel_major < 5 || (si->kernel_major == 5 && si->kernel_minor < 11)) &&
		       !ks_sysinfo_has_cap(si, KS_CAP_SYS_RESOURCE) && !ks_sysinfo_has_cap(si, KS_CAP_SYS_ADMIN);
	c = ks_checks_add(l, "capabilities", !privileged(si) ? KS_ST_MISSING : memlock ? KS_ST_WARN : KS_ST_OK,
			  "CAP_BPF %s, CAP_PERFMON %s, CAP_SYS_ADMIN %s, CAP_DAC_READ_SEARCH %s, CAP_SYS_RESOURCE %s",
			  ks_sysinfo_has_cap(si, KS_CAP_BPF) ? "yes" : "no",
			  ks_sysinfo_has_cap(si, KS_CAP_PERFMON) ? "yes" : "no",
			  ks_sysinfo_has_cap(si, KS_CAP_SYS_ADMIN) ? "yes" : "no",
			  ks_sysinfo_has_cap(si, KS_CAP_DAC_READ_SEARCH) ? "yes" : "no",
			  ks_sysinfo_has_cap(si, KS_CAP_SYS_RESOURCE) ? "yes" : "no");
	if (!c)
		return -ENOSPC;
	ks_check_set_detail(c, "effective set %016llx (capget)", (unsigned long long)si->cap_eff);
	if (!privileged(si)) {
		ks_check_set_impact(c, "tracing programs cannot be loaded: nothing can be traced");
		ks_check_set_fix(c, PRIV_FIX ": setcap cap_bpf,cap_perfmon+ep ksight (Linux 5.8+; CAP_SYS_ADMIN before)");
	} else if (memlock) {
		ks_check_set_impact(c, "before Linux 5.11 BPF maps count against RLIMIT_MEMLOCK: larger maps may fail to load");
		ks_check_set_fix(c, "add CAP_SYS_RESOURCE, or raise the limit (ulimit -l unlimited)");
	}
	return 0;
}

static int add_sysctls(struct ks_checks *l, const struct ks_sysinfo *si)
{
	bool perfmon = ks_sysinfo_has_cap(si, KS_CAP_PERFMON) || ks_sysinfo_has_cap(si, KS_CAP_SYS_ADMIN);
	int v = si->perf_event_paranoid;
	struct ks_check *c;

	/* perf_event_paranoid: CAP_PERFMON (or CAP_SYS_ADMIN) bypasses it */
	if (v == KS_SI_UNKNOWN)
		c = ks_checks_add(l, "perf_event_paranoid", KS_ST_WARN, "unknown (no sysctl: kernel without perf events?)");
	else if (perfmon)
		c = ks_checks_add(l, "perf_event_paranoid", KS_ST_OK, "%d (does not apply: CAP_PERFMON held)", v);
	else
		c = ks_checks_add(l, "perf_event_paranoid", v > 1 ? KS_ST_WARN : KS_ST_OK,
				  "%d (this process has no CAP_PERFMON)", v);
	if (!c)
		return -ENOSPC;
	ks_check_set_detail(c, "read /proc/sys/kernel/perf_event_paranoid");
	if (c->status != KS_ST_OK) {
		ks_check_set_impact(c, "%s", v == KS_SI_UNKNOWN ? "CPU sampling and perf events may be unavailable"
							 : "perf events are limited to user space of own processes");
		ks_check_set_fix(c, "%s", v == KS_SI_UNKNOWN ? "use a kernel with CONFIG_PERF_EVENTS=y"
							  : "run as root or with CAP_PERFMON, or: sysctl kernel.perf_event_paranoid=1");
	}

	/* kptr_restrict: 1 hides addresses from readers without CAP_SYSLOG, 2 from everyone */
	v = si->kptr_restrict;
	if (v == KS_SI_UNKNOWN)
		c = ks_checks_add(l, "kptr_restrict", KS_ST_WARN, "unknown (sysctl unreadable)");
	else if (v == 0)
		c = ks_checks_add(l, "kptr_restrict", KS_ST_OK, "0 (kernel addresses visible)");
	else if (v == 1 && ks_sysinfo_has_cap(si, KS_CAP_SYSLOG))
		c = ks_checks_add(l, "kptr_restrict", KS_ST_OK, "1 (addresses visible: CAP_SYSLOG held)");
	else
		c = ks_checks_add(l, "kptr_restrict", KS_ST_WARN, "%d (kernel addresses hidden from this process)", v);
	if (!c)
		return -ENOSPC;
	ks_check_set_detail(c, "read /proc/sys/kernel/kptr_restrict");
	if (c->status != KS_ST_OK) {
		ks_check_set_impact(c, "/proc/kallsyms shows zero addresses: kernel stacks (profile, offcpu) "
				       "cannot be symbolized");
		ks_check_set_fix(c, "%s", v == 1 ? "run as root (CAP_SYSLOG)"
						 : "sysctl kernel.kptr_restrict=1 (root may then read addresses)");
	}

	/* unprivileged_bpf_disabled only gates socket filters: tracing needs the capabilities regardless */
	v = si->unprivileged_bpf_disabled;
	if (v == KS_SI_UNKNOWN) {
		c = ks_checks_add(l, "unprivileged_bpf_disabled", KS_ST_WARN,
				  "unknown (no sysctl: kernel without the bpf syscall?)");
		if (!c)
			return -ENOSPC;
		ks_check_set_impact(c, "BPF may be unavailable altogether");
		ks_check_set_fix(c, "use a kernel with CONFIG_BPF_SYSCALL=y");
	} else {
		c = ks_checks_add(l, "unprivileged_bpf_disabled", KS_ST_OK,
				  "%d (%s; tracing needs CAP_BPF and CAP_PERFMON anyway)", v,
				  v ? "BPF for privileged users only" : "unprivileged BPF allowed");
		if (!c)
			return -ENOSPC;
	}
	ks_check_set_detail(c, "read /proc/sys/kernel/unprivileged_bpf_disabled");
	return 0;
}

static int add_lockdown(struct ks_checks *l, const struct ks_sysinfo *si)
{
	struct ks_check *c;

	if (!si->securityfs[0]) {
		c = ks_checks_add(l, "lockdown", KS_ST_WARN, "unknown (securityfs not mounted)");
		if (!c)
			return -ENOSPC;
		ks_check_set_impact(c, "if lockdown is 'confidentiality', kernel memory reads, kprobes and perf are refused");
		ks_check_set_fix(c, "to see the mode: mount -t securityfs securityfs /sys/kernel/security");
		return 0;
	}
	if (!si->lockdown[0])
		c = ks_checks_add(l, "lockdown", KS_ST_OK, "not enabled (no lockdown LSM)");
	else if (!strcmp(si->lockdown, "confidentiality"))
		c = ks_checks_add(l, "lockdown", KS_ST_MISSING, "%s", si->lockdown);
	else
		c = ks_checks_add(l, "lockdown", KS_ST_OK, "%s%s", si->lockdown,
				  strcmp(si->lockdown, "none") ? " (only writes to user memory are refused)" : "");
	if (!c)
		return -ENOSPC;
	ks_check_set_detail(c, "read %s/lockdown", si->securityfs);
	if (c->status != KS_ST_OK) {
		ks_check_set_impact(c, "bpf_probe_read_kernel, kprobes, perf and tracefs are refused: most collectors cannot run");
		ks_check_set_fix(c, "boot with lockdown=integrity (or without Secure Boot's lockdown)");
	}
	return 0;
}

/* Classic tracepoints, `list` and the syscall events need tracefs, readable by this process. */
static int add_tracefs(struct ks_checks *l, const struct ks_doctor_input *in)
{
	const struct ks_sysinfo *si = in->si;
	bool caps = ks_sysinfo_has_cap(si, KS_CAP_DAC_READ_SEARCH);
	struct ks_check *c;
	char e[96];

	if (si->tracefs[0] && si->tracefs_mode && !si->tracefs_readable) {
		c = ks_checks_add(l, "tracefs", KS_ST_MISSING, "mounted at %s, mode %04o, owner %u:%u: not readable by uid %u",
				  si->tracefs, si->tracefs_mode, si->tracefs_uid, si->tracefs_gid, si->euid);
		if (!c)
			return -ENOSPC;
		ks_check_set_detail(c, "%s/events refused read and search to this process (%s CAP_DAC_READ_SEARCH)",
				    si->tracefs, caps ? "with" : "without");
		ks_check_set_impact(c, "classic tracepoints cannot be attached (their ids are in tracefs): the tracepoint "
				       "fallback, collectors' classic-only events, syscall events, 'ksight list'");
		ks_check_set_fix(c, "add CAP_DAC_READ_SEARCH, or as root: mount -o remount,gid=%u,mode=0750 %s "
				    "(a group of tracing users)", si->egid, si->tracefs);
		return 0;
	}
	if (in->tracefs_mounted)
		c = ks_checks_add(l, "tracefs", KS_ST_OK, "not mounted: ksight mounts it at %s for itself while it runs",
				  si->tracefs[0] ? si->tracefs : "/sys/kernel/tracing");
	else if (si->tracefs[0])
		c = ks_checks_add(l, "tracefs", KS_ST_OK, "mounted at %s", si->tracefs);
	else
		c = ks_checks_add(l, "tracefs", KS_ST_MISSING, "not mounted%s",
				  in->tracefs_err == -EPERM ? "; mounting it needs CAP_SYS_ADMIN" : ", and cannot be mounted");
	if (!c)
		return -ENOSPC;
	if (c->status == KS_ST_OK) {
		if (in->tracefs_mounted)
			ks_check_set_detail(c, "mounted in a private mount namespace: other processes do not see it, "
					       "and it is gone when ksight exits");
		else if (si->tracefs_mode)
			ks_check_set_detail(c, "found in /proc/self/mounts; mode %04o, owner %u:%u, readable by uid %u",
					    si->tracefs_mode, si->tracefs_uid, si->tracefs_gid, si->euid);
		else
			ks_check_set_detail(c, "found in /proc/self/mounts");
		return 0;
	}
	err_text(in->tracefs_err, e, sizeof(e));
	ks_check_set_detail(c, "mount -t tracefs at /sys/kernel/tracing failed: %s", e);
	ks_check_set_impact(c, "classic tracepoints cannot be attached (their ids are in tracefs): the tracepoint "
			       "fallback, collectors' classic-only events, syscall events, 'ksight list'");
	if (in->tracefs_err == -EPERM)
		ks_check_set_fix(c, "as root: mount -t tracefs -o gid=%u,mode=0750 nodev /sys/kernel/tracing (or run "
				    "ksight as root, which mounts it for itself)", si->egid);
	else
		ks_check_set_fix(c, "mount -t tracefs nodev /sys/kernel/tracing (needs CONFIG_TRACING)");
	return 0;
}

/* Clock sources that cost a device read (around a microsecond) per timestamp. */
static bool slow_clock(const char *cs)
{
	static const char *const slow[] = { "hpet", "acpi_pm", "jiffies", "refined-jiffies", "pit", NULL };

	for (int i = 0; slow[i]; i++)
		if (!strcmp(cs, slow[i]))
			return true;
	return false;
}

static int add_clock(struct ks_checks *l, const struct ks_sysinfo *si)
{
	struct ks_check *c;

	if (!si->clocksource[0])
		c = ks_checks_add(l, "clocksource", KS_ST_WARN, "unknown");
	else
		c = ks_checks_add(l, "clocksource", slow_clock(si->clocksource) ? KS_ST_WARN : KS_ST_OK,
				  "%s (available: %s)", si->clocksource, si->clocksources[0] ? si->clocksources : "?");
	if (!c)
		return -ENOSPC;
	ks_check_set_detail(c, "read /sys/devices/system/clocksource/clocksource0/current_clocksource");
	if (c->status != KS_ST_OK) {
		ks_check_set_impact(c, "every timestamp (bpf_ktime_get_ns, clock_gettime) reads a slow device: "
				       "about 1 us per event of tracing cost");
		ks_check_set_fix(c, "%s", si->tsc_clocksource
					    ? "echo tsc > /sys/devices/system/clocksource/clocksource0/current_clocksource"
					    : "the kernel rejected the TSC (see 'dmesg | grep -i clocksource'); in a VM "
					      "use kvm-clock or expose an invariant TSC");
	}

	if (!si->cpu_flags_known) {
		c = ks_checks_add(l, "tsc", KS_ST_OK, "not applicable (no x86 flags in /proc/cpuinfo)");
		return c ? 0 : -ENOSPC;
	}
	c = ks_checks_add(l, "tsc", si->tsc && si->constant_tsc && si->nonstop_tsc ? KS_ST_OK : KS_ST_WARN,
			  "tsc %s, constant_tsc %s, nonstop_tsc %s, tsc_reliable %s", si->tsc ? "yes" : "no",
			  si->constant_tsc ? "yes" : "no", si->nonstop_tsc ? "yes" : "no",
			  si->tsc_reliable ? "yes" : "no");
	if (!c)
		return -ENOSPC;
	ks_check_set_detail(c, "flags of the first CPU in /proc/cpuinfo");
	if (c->status != KS_ST_OK) {
		ks_check_set_impact(c, "the TSC rate follows CPU frequency or stops in deep idle: the kernel may not "
				       "use it as clock source, so timestamps cost more");
		ks_check_set_fix(c, "a hardware property: use a CPU with an invariant TSC%s",
				 si->hypervisor ? "; in a VM expose it (qemu: -cpu host,+invtsc)" : "");
	}
	return 0;
}

static int add_cpus(struct ks_checks *l, const struct ks_sysinfo *si)
{
	char topo[160];
	struct ks_check *c;

	if (si->sockets && si->cores && si->cpus_online % si->cores == 0)
		snprintf(topo, sizeof(topo), "%d socket%s, %d core%s, %d thread%s per core", si->sockets,
			 si->sockets == 1 ? "" : "s", si->cores, si->cores == 1 ? "" : "s",
			 si->cpus_online / si->cores, si->cpus_online / si->cores == 1 ? "" : "s");
	else if (si->sockets && si->cores) /* SMT on some cores only, or some siblings offline */
		snprintf(topo, sizeof(topo), "%d socket%s, %d core%s, %d threads", si->sockets,
			 si->sockets == 1 ? "" : "s", si->cores, si->cores == 1 ? "" : "s", si->cpus_online);
	else
		snprintf(topo, sizeof(topo), "topology unreadable");
	c = ks_checks_add(l, "cpus", KS_ST_OK, "%d online of %d possible; %s; %d NUMA node%s%s%s", si->cpus_online,
			  si->cpus_possible, topo, si->numa_nodes, si->numa_nodes == 1 ? "" : "s",
			  si->cpu_model[0] ? "; " : "", si->cpu_model);
	if (!c)
		return -ENOSPC;
	ks_check_set_detail(c, "read /sys/devices/system/cpu/{online,possible,cpuN/topology} and "
			       "/sys/devices/system/node/online");
	return 0;
}

static int add_cpufreq(struct ks_checks *l, const struct ks_sysinfo *si)
{
	char govs[128] = "";
	size_t len = 0;
	bool perf = si->ngovernors == 1 && !strcmp(si->governors[0], "performance");
	struct ks_check *c;

	if (!si->cpufreq_cpus) {
		c = ks_checks_add(l, "cpufreq", KS_ST_WARN, "no cpufreq%s",
				  si->hypervisor ? " (a VM: the host decides CPU frequency)" : " driver");
		if (!c)
			return -ENOSPC;
		ks_check_set_detail(c, "no /sys/devices/system/cpu/cpuN/cpufreq/scaling_governor");
		ks_check_set_impact(c, "the frequency policy is invisible: results may vary with frequency and it "
				       "cannot be recorded");
		ks_check_set_fix(c, "%s", si->hypervisor ? "none inside the VM; for stable figures set the host's "
							   "governor to performance"
							 : "load a cpufreq driver (intel_pstate, amd-pstate, acpi-cpufreq)");
		return 0;
	}
	for (int i = 0; i < si->ngovernors; i++)
		len += (size_t)snprintf(govs + len, sizeof(govs) - len, "%s%s", i ? ", " : "", si->governors[i]);
	c = ks_checks_add(l, "cpufreq", perf ? KS_ST_OK : KS_ST_WARN, "%s on %d of %d CPUs (driver %s)", govs,
			  si->cpufreq_cpus, si->cpus_online, si->cpufreq_driver[0] ? si->cpufreq_driver : "?");
	if (!c)
		return -ENOSPC;
	ks_check_set_detail(c, "read /sys/devices/system/cpu/cpuN/cpufreq/scaling_governor");
	if (!perf) {
		ks_check_set_impact(c, "CPU frequency follows load: latencies vary from run to run");
		ks_check_set_fix(c, "for stable measurements: echo performance | tee "
				    "/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor");
	}
	return 0;
}

/* "/sys/fs/cgroup/{cpu,memory}" when the v1 mounts share a parent, else the list. */
static void v1_mounts(const struct ks_sysinfo *si, char *buf, size_t len)
{
	const char *first = si->cgroup_v1[0], *slash = strrchr(first, '/');
	size_t plen = slash ? (size_t)(slash - first) + 1 : 0, n = 0;
	bool common = si->ncgroup_v1 > 1 && plen;

	for (int i = 0; common && i < si->ncgroup_v1; i++)
		common = !strncmp(si->cgroup_v1[i], first, plen) && !strchr(si->cgroup_v1[i] + plen, '/');
	if (common)
		n += (size_t)snprintf(buf, len, "%.*s{", (int)plen, first);
	for (int i = 0; i < si->ncgroup_v1 && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? "," : "",
				      si->cgroup_v1[i] + (common ? plen : 0));
	if (common && n < len)
		snprintf(buf + n, len - n, "}");
}

static int add_cgroup(struct ks_checks *l, const struct ks_sysinfo *si)
{
	char v1[160] = "";
	struct ks_check *c;

	if (si->ncgroup_v1)
		v1_mounts(si, v1, sizeof(v1));
	switch (si->cgroup) {
	case KS_CG_V2:
		c = ks_checks_add(l, "cgroup", KS_ST_OK, "v2 at %s", si->cgroup2);
		break;
	case KS_CG_HYBRID:
		c = ks_checks_add(l, "cgroup", KS_ST_WARN, "hybrid: v2 at %s, v1 at %s", si->cgroup2, v1);
		break;
	case KS_CG_V1:
		c = ks_checks_add(l, "cgroup", KS_ST_WARN, "v1 only, at %s", v1);
		break;
	default:
		c = ks_checks_add(l, "cgroup", KS_ST_WARN, "no cgroup file system mounted");
		break;
	}
	if (!c)
		return -ENOSPC;
	ks_check_set_detail(c, "cgroup and cgroup2 mounts in /proc/self/mounts");
	if (si->cgroup == KS_CG_HYBRID) {
		ks_check_set_impact(c, "-c and --by cgroup use the v2 tree at %s; controllers (memory, cpu) are in v1, "
				       "so v1-only groups cannot be named", si->cgroup2);
		ks_check_set_fix(c, "for a pure v2 system boot with systemd.unified_cgroup_hierarchy=1");
	} else if (si->cgroup != KS_CG_V2) {
		ks_check_set_impact(c, "-c and --by cgroup need cgroup v2 and are unavailable");
		ks_check_set_fix(c, "mount -t cgroup2 none %s, or boot with systemd.unified_cgroup_hierarchy=1",
				 si->cgroup == KS_CG_V1 ? "/sys/fs/cgroup/unified" : "/sys/fs/cgroup");
	}
	return 0;
}

/* Tracing needs BTF (every collector is CO-RE) and at least one hook type into the kernel. */
static void decide(struct ks_checks *l, const struct ks_doctor_input *in)
{
	static const enum ks_feature kernel_hooks[] = { KS_FEAT_FENTRY, KS_FEAT_TP_BTF, KS_FEAT_RAW_TP, KS_FEAT_TP,
							KS_FEAT_KPROBE };
	char ok[128] = "";
	size_t n = 0;

	for (size_t i = 0; i < sizeof(kernel_hooks) / sizeof(kernel_hooks[0]); i++)
		if (in->probe[kernel_hooks[i]].ok)
			n += (size_t)snprintf(ok + n, sizeof(ok) - n, "%s%s", n ? " " : "",
					      ks_feature_name(kernel_hooks[i]));
	const struct ks_check *tfs = ks_checks_find(l, "tracefs");

	l->tracing_possible = in->probe[KS_FEAT_BTF].ok && n;
	if (l->tracing_possible && !in->probe[KS_FEAT_TP].ok && tfs && tfs->status != KS_ST_OK)
		snprintf(l->summary, sizeof(l->summary),
			 "tracing is possible; kernel hooks: %s; not classic tracepoints, as tracefs is %s (see tracefs): "
			 "collectors that need them fail and say so", ok,
			 in->si->tracefs[0] ? "not readable" : "not mounted");
	else if (l->tracing_possible)
		snprintf(l->summary, sizeof(l->summary), "tracing is possible; kernel hooks: %s", ok);
	else if (!in->probe[KS_FEAT_BTF].ok)
		snprintf(l->summary, sizeof(l->summary), "tracing is not possible: no kernel BTF");
	else if (!privileged(in->si))
		snprintf(l->summary, sizeof(l->summary), "tracing is not possible: not privileged (see capabilities)");
	else
		snprintf(l->summary, sizeof(l->summary), "tracing is not possible: no kernel hook type can be "
							 "loaded and attached");
}

int ks_checks_evaluate(const struct ks_doctor_input *in, struct ks_checks *l)
{
	const struct ks_sysinfo *si = in->si;
	struct ks_check *c;
	int err;

	ks_checks_init(l, si->release);
	l->si = si;
	c = ks_checks_add(l, "kernel", KS_ST_OK, "%s %s%s%s%s", si->release, si->version, si->machine[0] ? " (" : "",
			  si->machine, si->machine[0] ? ")" : "");
	if (!c)
		return -ENOSPC;
	if (si->kconfig_src[0])
		ks_check_set_detail(c, "kernel config read from %s", si->kconfig_src);
	else
		ks_check_set_detail(c, "kernel config not readable (no /proc/config.gz or /boot/config-%s)", si->release);
	err = add_kernel_min(l, in);
	if (!err)
		err = add_btf(l, in);
	if (!err)
		err = add_hooks(l, in);
	if (!err)
		err = add_caps(l, si);
	if (!err)
		err = add_sysctls(l, si);
	if (!err)
		err = add_lockdown(l, si);
	if (!err)
		err = add_tracefs(l, in);
	if (!err)
		err = add_clock(l, si);
	if (!err)
		err = add_cpus(l, si);
	if (!err)
		err = add_cpufreq(l, si);
	if (!err)
		err = add_cgroup(l, si);
	decide(l, in);
	return err;
}
