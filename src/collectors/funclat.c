/* User side of `ksight funclat`: targets (BINARY:FUNCTION, BINARY:PROVIDER:PROBE, kernel FUNCTION) resolved and attached, rows drained per function. */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "core/bpfutil.h"
#include "core/budget.h"
#include "core/collector.h"
#include "core/filter.h"
#include "core/hash.h"
#include "core/loader.h"
#include "core/log.h"
#include "core/parse.h"
#include "core/pin.h"
#include "core/probe.h"
#include "core/procfs.h"
#include "core/scaffold.h"
#include "core/sysinfo.h"
#include "core/tracefs.h"
#include "ksight/funclat.h"
#include "symbol/elfsym.h"
#include "funclat.skel.h"

/* Calls of one thread in flight at once, over all functions, that the in-flight map holds. */
#define FL_STARTS 16384
/* serve --pin: funclat has one set of programs, its hook marker in the pin directory (core/pin.h) */
#define FL_PIN_HOOK "probes"

enum fl_kind { FL_UPROBE, FL_USDT, FL_KERNEL };

struct fl_target {
	enum fl_kind kind;
	char *path;	/* user: the file probed */
	char *module;	/* shown: the file's name, or "kernel" */
	char *func;	/* shown: function, or provider:probe */
	char *provider, *probe;
	uint64_t offset;
	bool fentry;	/* kernel: attached with fentry/fexit (else kprobes) */
};

KS_SKEL_OPS(ks_funclat);

struct fl_ctx {
	struct ks_scaffold sc; /* first: the lifecycle is core's (core/scaffold.h) */
	char **specs;
	int nspecs;
	struct fl_target *t;
	int n, cap;
	const char *khook; /* kernel targets: "fentry" or "kprobe" */
	const struct ks_common *c;
	bool any[3];	   /* which kinds of target there are */
	struct ks_funclat *skel; /* the skeleton being attached (fl_attach): its maps and programs */
	struct ks_funclat **fobj; /* one fentry/fexit object per kernel function attached so */
	struct bpf_link **links;
	int nlinks;
	bool umulti;	/* user functions: one uprobe_multi link per file and direction */
	int *mlinks;	/* their fds */
	int nmlinks;
	bool percpu;
	const struct ks_filter *f; /* for fl_size: the filter the rodata carries */
	uint64_t thash;		   /* the targets' identity, in .rodata for --pin (targets_hash) */
	int *pfds;		   /* adopted under --pin: the pinned fentry/fexit programs, for their misses */
	int npfds;
	char hook[48];
};

static const struct ks_column fl_cols[] = {
	{ "count", KS_COL_COUNTER, KS_UNIT_COUNT, "calls entered (USDT: probe firings)" },
	{ "total_ns", KS_COL_DURATION, KS_UNIT_NS, "summed time of the calls that returned, entry to return" },
	{ NULL, 0, 0, NULL },
};
static const struct ks_schema fl_schema = { fl_cols, "latency_ns", KS_UNIT_NS,
					    "each returned call's time from entry to return",
					    (const char *const[]){ "function", "module", NULL }, .keys_whole = true };

static int fl_parse_opt(void *vctx, int id, const char *arg)
{
	struct fl_ctx *ctx = vctx;
	char **n;

	if (id != KS_OPT_ARG)
		return -EINVAL;
	n = realloc(ctx->specs, (ctx->nspecs + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	ctx->specs = n;
	ctx->specs[ctx->nspecs++] = (char *)arg;
	return 0;
}

static struct fl_target *add_target(struct fl_ctx *ctx, enum fl_kind kind, const char *path, const char *func)
{
	struct fl_target *t;
	const char *base;

	if (ctx->n >= KS_FL_MAX_FUNCS) {
		errno = E2BIG;
		return NULL;
	}
	if (ctx->n == ctx->cap) {
		int cap = ctx->cap ? 2 * ctx->cap : 16;
		struct fl_target *nt = realloc(ctx->t, cap * sizeof(*nt));

		if (!nt)
			return NULL;
		ctx->t = nt;
		ctx->cap = cap;
	}
	t = &ctx->t[ctx->n];
	memset(t, 0, sizeof(*t));
	t->kind = kind;
	base = path ? strrchr(path, '/') : NULL;
	t->path = path ? strdup(path) : NULL;
	t->module = strdup(path ? (base ? base + 1 : path) : "kernel");
	t->func = strdup(func);
	if ((path && !t->path) || !t->module || !t->func) {
		free(t->path);
		free(t->module);
		free(t->func);
		errno = ENOMEM;
		return NULL;
	}
	ctx->n++;
	return t;
}

static bool has_glob(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

/* The hook KSIGHT_HOOK asks for; NULL when unset or empty, as for the loader (ks_load_first). */
static const char *hook_asked(void)
{
	const char *only = getenv("KSIGHT_HOOK");

	return only && *only ? only : NULL;
}

/* fentry where this kernel has trampolines, else kprobes; NULL when neither (KSIGHT_HOOK picks one). */
static const char *kernel_hook(void)
{
	const char *only = hook_asked();
	if ((!only || !strcmp(only, KS_HOOK_FENTRY)) && ks_probe(KS_FEAT_FENTRY)->ok)
		return KS_HOOK_FENTRY;
	if ((!only || !strcmp(only, KS_HOOK_KPROBE)) && ks_probe(KS_FEAT_KPROBE)->ok)
		return KS_HOOK_KPROBE;
	return NULL;
}

/* Kernel functions matching @pat, from tracefs's available_filter_functions (the ones that can be probed). */
static int kernel_targets(struct fl_ctx *ctx, const char *pat)
{
	const char *dir = ks_tracefs_dir(NULL);
	char path[4096], line[512], last[512] = "";
	int found = 0;
	FILE *f;

	if (!dir || snprintf(path, sizeof(path), "%s/available_filter_functions", dir) >= (int)sizeof(path) ||
	    !(f = fopen(path, "re"))) {
		if (has_glob(pat)) {
			p_err("funclat: cannot list the kernel's functions for '%s' (available_filter_functions in tracefs): %s",
			      KS_ESC(pat), strerror(errno));
			return -EINVAL;
		}
		/* one exact name: the attach says whether it exists */
		return add_target(ctx, FL_KERNEL, NULL, pat) ? 0 : -errno;
	}
	while (fgets(line, sizeof(line), f)) {
		/* "name" or "name [module]"; a name listed twice (two static functions) is probed once */
		line[strcspn(line, " \t\n")] = 0;
		if (!line[0] || fnmatch(pat, line, 0) || !strcmp(line, last))
			continue;
		snprintf(last, sizeof(last), "%s", line);
		if (!add_target(ctx, FL_KERNEL, NULL, line)) {
			fclose(f);
			if (errno == E2BIG)
				p_err("funclat: '%s' matches more than %d functions; name fewer", KS_ESC(pat), KS_FL_MAX_FUNCS);
			return errno == E2BIG ? -EINVAL : -errno;
		}
		found++;
	}
	fclose(f);
	if (!found) {
		p_err("funclat: no kernel function matches '%s' (see %s)", KS_ESC(pat), path);
		return -EINVAL;
	}
	return 0;
}

static int user_targets(struct fl_ctx *ctx, const struct ks_common *c, const char *bin, const char *a, const char *b)
{
	char path[4096];
	int err = ks_elf_resolve(bin, c->pid, path, sizeof(path));

	if (err) {
		if (c->pid && !ks_procfs_pid_exists(NULL, c->pid, 0))
			p_err("funclat: no process %u", c->pid);
		else if (c->pid)
			p_err("funclat: process %u maps no file named '%s': %s", c->pid, KS_ESC(bin), strerror(-err));
		else
			p_err("funclat: cannot find '%s' (a path, a library in the linker's directories, or a program "
			      "on PATH): %s", KS_ESC(bin), strerror(-err));
		return -EINVAL;
	}
	if (!b) {
		struct ks_elf_func *fs;
		size_t n, nifunc;

		err = ks_elf_funcs(path, a, &fs, &n, &nifunc);
		if (err) {
			p_err("funclat: cannot read the symbols of '%s': %s", KS_ESC(path),
			      err == -ENOEXEC ? "not an ELF file" : strerror(-err));
			return -EINVAL;
		}
		for (size_t i = 0; i < n && !err; i++) {
			struct fl_target *t = add_target(ctx, FL_UPROBE, path, fs[i].name);

			if (t)
				t->offset = fs[i].offset;
			else
				err = -errno;
		}
		ks_elf_funcs_free(fs, n);
		if (err == -E2BIG)
			p_err("funclat: '%s:%s' matches more than %d functions; name fewer", KS_ESC(bin), KS_ESC(a),
			      KS_FL_MAX_FUNCS);
		if (err)
			return err == -E2BIG ? -EINVAL : err;
		if (!n) {
			p_err("funclat: no function matches '%s' in %s%s", KS_ESC(a), KS_ESC(path),
			      nifunc ? " (only indirect functions (IFUNC) do: their resolvers run once, not the calls)" : "");
			return -EINVAL;
		}
		return 0;
	}
	{
		struct ks_elf_usdt *us;
		size_t n;

		err = ks_elf_usdts(path, a, b, &us, &n);
		if (err) {
			p_err("funclat: cannot read the USDT notes of '%s': %s", KS_ESC(path),
			      err == -ENOEXEC ? "not an ELF file" : strerror(-err));
			return -EINVAL;
		}
		for (size_t i = 0; i < n && !err; i++) {
			char name[512];
			struct fl_target *t;

			snprintf(name, sizeof(name), "%s:%s", us[i].provider, us[i].name);
			t = add_target(ctx, FL_USDT, path, name);
			if (t) {
				t->provider = strdup(us[i].provider);
				t->probe = strdup(us[i].name);
				if (!t->provider || !t->probe)
					err = -ENOMEM;
			} else {
				err = -errno;
			}
		}
		ks_elf_usdts_free(us, n);
		if (err)
			return err == -E2BIG ? -EINVAL : err;
		if (!n) {
			p_err("funclat: no USDT probe '%s:%s' in %s", KS_ESC(a), KS_ESC(b), KS_ESC(path));
			return -EINVAL;
		}
	}
	return 0;
}

/* Resolves every target before anything is loaded: a name that matches nothing is bad usage. */
static int fl_prepare(void *vctx, const struct ks_common *c)
{
	struct fl_ctx *ctx = vctx;
	int err = 0;

	if (!ctx->nspecs) {
		p_err("funclat: no function given; e.g. 'ksight funclat libc.so.6:malloc', 'ksight funclat "
		      "/path/prog:PROVIDER:PROBE' or 'ksight funclat vfs_read'");
		return -EINVAL;
	}
	for (int i = 0; i < ctx->nspecs && !err; i++) {
		char *s = strdup(ctx->specs[i]), *p1, *p2;

		if (!s)
			return -ENOMEM;
		p1 = strchr(s, ':');
		p2 = p1 ? strchr(p1 + 1, ':') : NULL;
		if (p1)
			*p1++ = 0;
		if (p2)
			*p2++ = 0;
		if (!*s || (p1 && !*p1) || (p2 && (!*p2 || strchr(p2, ':')))) {
			p_err("funclat: invalid target '%s': expected FUNCTION (kernel), BINARY:FUNCTION or "
			      "BINARY:PROVIDER:PROBE", KS_ESC(ctx->specs[i]));
			err = -EINVAL;
		} else if (!p1) {
			if (!ctx->khook)
				ctx->khook = kernel_hook();
			if (!ctx->khook) {
				p_err("funclat: kernel function '%s' needs fentry/fexit or kprobes, and this kernel has "
				      "neither (see 'ksight doctor'); user functions (BINARY:FUNCTION) work", KS_ESC(s));
				err = -EINVAL;
			} else {
				err = kernel_targets(ctx, s);
			}
		} else {
			err = user_targets(ctx, c, s, p1, p2);
		}
		free(s);
	}
	return err;
}

/* Room for one more link. */
static int keep_link(struct fl_ctx *ctx, struct bpf_link *l)
{
	struct bpf_link **n;

	if (!l)
		return -errno;
	n = realloc(ctx->links, (ctx->nlinks + 1) * sizeof(*n));
	if (!n) {
		bpf_link__destroy(l);
		return -ENOMEM;
	}
	ctx->links = n;
	ctx->links[ctx->nlinks++] = l;
	return 0;
}

static void set_common(struct fl_ctx *ctx, struct ks_funclat *s, const struct ks_filter *f)
{
	s->rodata->ks_filter = *f;
	s->rodata->nfuncs = ctx->n;
	s->rodata->targets_hash = ctx->thash;
	s->rodata->percpu = ctx->percpu;
	/* both ways: ks_budget_fit sizes at several budgets, and a later one may allow per-CPU rows again */
	bpf_map__set_type(s->maps.rows, ctx->percpu ? BPF_MAP_TYPE_PERCPU_ARRAY : BPF_MAP_TYPE_ARRAY);
	bpf_map__set_max_entries(s->maps.rows, 2 * ctx->n);
	bpf_map__set_max_entries(s->maps.starts, FL_STARTS);
}

/* The targets' identity, in order: kind, file, function and offset of each (pinned programs are adopted only for the same). */
static uint64_t targets_hash(const struct fl_ctx *ctx)
{
	uint64_t h = KS_FNV1A_INIT;

	for (int i = 0; i < ctx->n; i++) {
		const struct fl_target *t = &ctx->t[i];
		uint32_t kind = t->kind;

		h = ks_fnv1a(&kind, sizeof(kind), h);
		h = ks_fnv1a(&t->offset, sizeof(t->offset), h);
		if (t->path)
			h = ks_fnv1a(t->path, strlen(t->path) + 1, h);
		h = ks_fnv1a(t->func, strlen(t->func) + 1, h);
	}
	return h;
}

/*
 * The load's configure, at each limit of a shared budget's fit: the
 * programs the targets need, then per-CPU rows while both halves fit in
 * half the budget at the possible-CPU count, else shared rows with atomics.
 */
static int configure(void *vctx, void *skel, const char *hook)
{
	struct fl_ctx *ctx = vctx;
	struct ks_funclat *s = skel;
	const bool *any = ctx->any;
	uint64_t pc = ks_budget_row_bytes(&ctx->sc.budget, BPF_MAP_TYPE_PERCPU_ARRAY, 4, sizeof(struct ks_fl_row), 0);

	(void)hook;
	bpf_program__set_autoload(s->progs.fl_uentry, any[FL_UPROBE] && !ctx->umulti);
	bpf_program__set_autoload(s->progs.fl_ureturn, any[FL_UPROBE] && !ctx->umulti);
	bpf_program__set_autoload(s->progs.fl_umentry, ctx->umulti);
	bpf_program__set_autoload(s->progs.fl_umreturn, ctx->umulti);
	if (ctx->umulti) {
		ks_uprobe_multi_prepare(s->progs.fl_umentry);
		ks_uprobe_multi_prepare(s->progs.fl_umreturn);
	}
	bpf_program__set_autoload(s->progs.fl_usdt, any[FL_USDT]);
	/* kprobes also where fentry is chosen: the fallback for a function a trampoline cannot take */
	bpf_program__set_autoload(s->progs.fl_kentry, any[FL_KERNEL] && ks_probe(KS_FEAT_KPROBE)->ok);
	bpf_program__set_autoload(s->progs.fl_kreturn, any[FL_KERNEL] && ks_probe(KS_FEAT_KPROBE)->ok);
	bpf_program__set_autoload(s->progs.fl_fentry, false);
	bpf_program__set_autoload(s->progs.fl_fexit, false);
	ctx->percpu = 2 * (uint64_t)ctx->n * pc <= ctx->sc.budget.limit / 2;
	set_common(ctx, s, ctx->f);
	return 0;
}

/* fentry/fexit on kernel function @i: its own object (one target per trampoline program), the maps shared. */
static int attach_fentry(struct fl_ctx *ctx, int i, const struct ks_filter *f)
{
	struct ks_funclat *s = ks_funclat__open();
	struct bpf_program *p;
	struct ks_funclat **n;
	int err;

	if (!s)
		return -errno;
	set_common(ctx, s, f);
	s->rodata->fn_idx = i;
	/* the followed set's map (its programs are left out below: one object attached them) */
	err = ks_follow_prepare(s->obj);
	bpf_object__for_each_program(p, s->obj)
		bpf_program__set_autoload(p, p == s->progs.fl_fentry || p == s->progs.fl_fexit);
	if (!err)
		err = bpf_program__set_attach_target(s->progs.fl_fentry, 0, ctx->t[i].func);
	if (!err)
		err = bpf_program__set_attach_target(s->progs.fl_fexit, 0, ctx->t[i].func);
	if (!err)
		err = bpf_map__reuse_fd(s->maps.rows, bpf_map__fd(ctx->skel->maps.rows));
	if (!err)
		err = bpf_map__reuse_fd(s->maps.starts, bpf_map__fd(ctx->skel->maps.starts));
	if (!err)
		err = bpf_map__reuse_fd(s->maps.bss, bpf_map__fd(ctx->skel->maps.bss));
	if (!err)
		err = ks_funclat__load(s);
	if (!err)
		err = ks_funclat__attach(s);
	if (!err) {
		n = realloc(ctx->fobj, (i + 1) * sizeof(*n));
		if (!n)
			err = -ENOMEM;
		else
			ctx->fobj = n;
	}
	if (err) {
		ks_funclat__destroy(s);
		return err;
	}
	ctx->fobj[i] = s;
	return 0;
}

static int attach_one(struct fl_ctx *ctx, int i, const struct ks_common *c, const struct ks_filter *f)
{
	struct fl_target *t = &ctx->t[i];
	int pid = c->pid ? (int)c->pid : -1, err;

	switch (t->kind) {
	case FL_UPROBE: {
		LIBBPF_OPTS(bpf_uprobe_opts, o, .bpf_cookie = i);

		/* the entry first: a call already running when its return probe arrives is not timed at all */
		err = keep_link(ctx, bpf_program__attach_uprobe_opts(ctx->skel->progs.fl_uentry, pid, t->path, t->offset, &o));
		o.retprobe = true;
		if (!err)
			err = keep_link(ctx, bpf_program__attach_uprobe_opts(ctx->skel->progs.fl_ureturn, pid, t->path,
									    t->offset, &o));
		return err;
	}
	case FL_USDT: {
		LIBBPF_OPTS(bpf_usdt_opts, o, .usdt_cookie = i);

		return keep_link(ctx, bpf_program__attach_usdt(ctx->skel->progs.fl_usdt, pid, t->path, t->provider,
							       t->probe, &o));
	}
	case FL_KERNEL: {
		LIBBPF_OPTS(bpf_kprobe_opts, o, .bpf_cookie = i);

		if (!strcmp(ctx->khook, KS_HOOK_FENTRY)) {
			err = attach_fentry(ctx, i, f);
			if (!err) {
				t->fentry = true;
				return 0;
			}
			/* a function without BTF or a trampoline: kprobes, where the kernel has them */
			p_dbg("funclat: fentry on %s: %s; trying kprobes", t->func, strerror(-err));
			if (!ks_probe(KS_FEAT_KPROBE)->ok)
				return err;
		}
		err = keep_link(ctx, bpf_program__attach_kprobe_opts(ctx->skel->progs.fl_kentry, t->func, &o));
		o.retprobe = true;
		if (!err)
			err = keep_link(ctx, bpf_program__attach_kprobe_opts(ctx->skel->progs.fl_kreturn, t->func, &o));
		return err;
	}
	}
	return -EINVAL;
}

/* Keeps a uprobe_multi link's fd (or negative errno). */
static int keep_mlink(struct fl_ctx *ctx, int fd)
{
	int *n;

	if (fd < 0)
		return fd;
	n = realloc(ctx->mlinks, (ctx->nmlinks + 1) * sizeof(*n));
	if (!n) {
		close(fd);
		return -ENOMEM;
	}
	ctx->mlinks = n;
	ctx->mlinks[ctx->nmlinks++] = fd;
	return 0;
}

/*
 * The user functions of the file of target @first and of every later
 * target in that file, as two uprobe_multi links (entries first: a call
 * already running when its return probe arrives is not timed at all).
 * Marks each in @done.
 */
static int attach_file_multi(struct fl_ctx *ctx, int first, int pid, bool *done)
{
	uint64_t *offs = calloc(ctx->n, sizeof(*offs)), *cookies = calloc(ctx->n, sizeof(*cookies));
	const char *path = ctx->t[first].path;
	uint32_t cnt = 0;
	int err;

	if (!offs || !cookies) {
		err = -ENOMEM;
		goto out;
	}
	for (int i = first; i < ctx->n; i++)
		if (ctx->t[i].kind == FL_UPROBE && !done[i] && !strcmp(ctx->t[i].path, path)) {
			offs[cnt] = ctx->t[i].offset;
			cookies[cnt++] = (uint64_t)i;
			done[i] = true;
		}
	err = keep_mlink(ctx, ks_uprobe_multi_link(bpf_program__fd(ctx->skel->progs.fl_umentry), path, offs, cookies,
						   cnt, false, pid));
	if (!err)
		err = keep_mlink(ctx, ks_uprobe_multi_link(bpf_program__fd(ctx->skel->progs.fl_umreturn), path, offs,
							   cookies, cnt, true, pid));
	p_dbg("funclat: %u functions of %s in one uprobe_multi link each way: %s", cnt, path, err ? strerror(-err) : "ok");
out:
	free(offs);
	free(cookies);
	return err;
}

/* Attaches every target (fresh, not adopted): 0, or -ECANCELED after a one-line error naming the target. */
static int attach_all(struct fl_ctx *ctx, const struct ks_common *c, const struct ks_filter *f)
{
	bool *done;
	int err = 0;

	done = calloc(ctx->n, sizeof(*done));
	if (!done)
		return -ENOMEM;
	for (int i = 0; i < ctx->n; i++) {
		uint64_t eff = 0;

		if (done[i])
			continue;
		if (ctx->umulti && ctx->t[i].kind == FL_UPROBE)
			err = attach_file_multi(ctx, i, c->pid ? (int)c->pid : -1, done);
		else
			err = attach_one(ctx, i, c, f);
		/*
		 * Uprobes (USDT too) take CAP_SYS_ADMIN again since Linux 6.16 and
		 * the stable kernels it went to (commit ba677dbe77af: a probe in the
		 * middle of an instruction can corrupt the process); CAP_PERFMON,
		 * enough for everything else, gets EACCES from perf_event_open.
		 */
		if (err == -EACCES && ctx->t[i].kind != FL_KERNEL && !ks_caps_effective(&eff) &&
		    !(eff & (1ull << KS_CAP_SYS_ADMIN))) {
			p_err("funclat: cannot attach a uprobe to %s:%s: this kernel allows uprobes only with CAP_SYS_ADMIN "
			      "(CAP_PERFMON is not enough since Linux 6.16 and its stable backports)",
			      ctx->t[i].path, ctx->t[i].func);
			free(done);
			return -ECANCELED;
		}
		if (err && ctx->umulti && ctx->t[i].kind == FL_UPROBE)
			p_err("funclat: cannot attach to the functions of %s (uprobe_multi): %s", ctx->t[i].path,
			      strerror(-err));
		else if (err)
			p_err("funclat: cannot attach to %s%s%s: %s", ctx->t[i].kind == FL_KERNEL ? "" : ctx->t[i].path,
			      ctx->t[i].kind == FL_KERNEL ? "" : ":", ctx->t[i].func, strerror(-err));
		if (err) {
			free(done);
			return -ECANCELED; /* said: the driver adds nothing */
		}
	}
	free(done);
	return 0;
}

/*
 * --pin, after a fresh attach: the programs, maps and every link funclat
 * made itself (per target, outside the skeleton) pinned together, so that
 * a restarted serve adopts them (adopt_pins); nothing without a pin scope.
 */
static int fl_pin(void *vctx, void *skel, const char *hook)
{
	struct fl_ctx *ctx = vctx;
	struct ks_funclat *s = skel;
	struct ks_pin_extra *x;
	int n = 0, err;

	if (!ks_pin_dir())
		return 0;
	x = calloc((size_t)(ctx->nlinks + ctx->nmlinks + 4 * ctx->n), sizeof(*x));
	if (!x)
		return -ENOMEM;
	for (int i = 0; i < ctx->nlinks; i++, n++) {
		snprintf(x[n].name, sizeof(x[n].name), "link_x%d", i);
		x[n].fd = bpf_link__fd(ctx->links[i]);
	}
	for (int i = 0; i < ctx->nmlinks; i++, n++) {
		snprintf(x[n].name, sizeof(x[n].name), "link_m%d", i);
		x[n].fd = ctx->mlinks[i];
	}
	/* a kernel function taken by fentry: its own object's programs (named: they tell adopt_pins) and links */
	for (int i = 0; i < ctx->n; i++) {
		struct ks_funclat *o = ctx->fobj[i];

		if (!o)
			continue;
		snprintf(x[n].name, sizeof(x[n].name), "prog_fentry_%d", i);
		x[n++].fd = bpf_program__fd(o->progs.fl_fentry);
		snprintf(x[n].name, sizeof(x[n].name), "prog_fexit_%d", i);
		x[n++].fd = bpf_program__fd(o->progs.fl_fexit);
		snprintf(x[n].name, sizeof(x[n].name), "link_fentry_%d", i);
		x[n++].fd = bpf_link__fd(o->links.fl_fentry);
		snprintf(x[n].name, sizeof(x[n].name), "link_fexit_%d", i);
		x[n++].fd = bpf_link__fd(o->links.fl_fexit);
	}
	err = ks_pin_attached_extra(s->obj, s->skeleton, hook, x, n);
	free(x);
	return err;
}

/*
 * --pin, adopting (ks_pin_prepare checked the programs, the maps and the
 * .rodata with these targets): the pinned links keep the programs of the
 * serve that attached them running, nothing is attached again.  Which
 * kernel functions fentry took is told by their pinned programs.
 */
static int adopt_pins(struct fl_ctx *ctx)
{
	ctx->pfds = calloc((size_t)(2 * ctx->n), sizeof(*ctx->pfds));
	if (!ctx->pfds)
		return -ENOMEM;
	for (int i = 0; i < ctx->n; i++) {
		static const char *const names[] = { "prog_fentry_%d", "prog_fexit_%d" };

		for (int k = 0; k < 2 && ctx->t[i].kind == FL_KERNEL; k++) {
			char name[40];
			int fd;

			snprintf(name, sizeof(name), names[k], i);
			fd = ks_pin_extra_get(ctx->skel->obj, name);
			if (fd == -ENOENT)
				continue;
			if (fd < 0)
				return fd;
			ctx->pfds[ctx->npfds++] = fd;
			ctx->t[i].fentry = true;
		}
	}
	return 0;
}

/* The load's attach: every target fresh, or (--pin) the pinned programs adopted. */
static int fl_attach(void *vctx, void *skel)
{
	struct fl_ctx *ctx = vctx;

	ctx->skel = skel;
	return ks_pin_adopted(ctx->skel->obj) ? adopt_pins(ctx) : attach_all(ctx, ctx->c, ctx->f);
}

/* Once running: the hook as attached ("uprobe+usdt+fentry+kprobe"), in place of the set's name. */
static int fl_attached(void *vctx)
{
	struct fl_ctx *ctx = vctx;
	const bool *any = ctx->any;
	int nk = 0, nf = 0;
	size_t l = 0;

	for (int i = 0; i < ctx->n; i++)
		if (ctx->t[i].kind == FL_KERNEL)
			nk++, nf += ctx->t[i].fentry;
	if (any[FL_UPROBE])
		l += snprintf(ctx->hook + l, sizeof(ctx->hook) - l, "uprobe");
	if (any[FL_USDT])
		l += snprintf(ctx->hook + l, sizeof(ctx->hook) - l, "%susdt", l ? "+" : "");
	if (nf)
		l += snprintf(ctx->hook + l, sizeof(ctx->hook) - l, "%sfentry", l ? "+" : "");
	if (nk > nf)
		snprintf(ctx->hook + l, sizeof(ctx->hook) - l, "%skprobe", l ? "+" : "");
	ctx->sc.hook = ctx->hook;
	if (ks_verbose) {
		/* the loader's form: the hook, and why a better one was not taken */
		if (any[FL_KERNEL] && strcmp(ctx->khook, KS_HOOK_FENTRY))
			p_info("hook: %s (fentry: %s)", ctx->hook,
			       hook_asked() ? "not asked for (KSIGHT_HOOK)"
						     : strerror(-ks_probe(KS_FEAT_FENTRY)->err));
		else
			p_info("hook: %s", ctx->hook);
		p_info("funclat: %d target%s attached, rows %s%s", ctx->n, ctx->n == 1 ? "" : "s",
		       ctx->percpu ? "per CPU" : "shared",
		       ctx->umulti ? ", user functions by uprobe_multi" : any[FL_UPROBE] ? ", a uprobe per user function" : "");
	}
	return 0;
}

static const struct ks_sc_def fl_def;

static int fl_open(void *vctx, const struct ks_common *c, const struct ks_filter *f)
{
	struct fl_ctx *ctx = vctx;

	if (!ctx->n) {
		p_err("funclat: no function given; 'ksight run' and 'ksight serve' take them as --funclat TARGET");
		return -ECANCELED;
	}
	for (int i = 0; i < ctx->n; i++)
		ctx->any[ctx->t[i].kind] = true;
	if (ctx->any[FL_USDT] && ks_pin_dir()) {
		/* libbpf attaches a USDT probe as one link per site, kept inside its own and never pinnable */
		p_err("funclat: --pin cannot keep USDT targets (libbpf's links of each probe site cannot be pinned); "
		      "serve them from a serve without --pin");
		return -ECANCELED;
	}
	ctx->thash = targets_hash(ctx);
	ctx->c = c;
	ctx->f = f;
	/* decided once: where the kernel has uprobe_multi, every user function goes through it */
	ctx->umulti = ctx->any[FL_UPROBE] && ks_probe(KS_FEAT_UPROBE_MULTI)->ok;
	ctx->fobj = calloc(ctx->n, sizeof(*ctx->fobj));
	if (!ctx->fobj)
		return -ENOMEM;
	return ks_sc_open(&ctx->sc, &fl_def, c);
}

struct fl_drain_arg {
	struct fl_ctx *ctx;
	struct ks_report *r;
	uint32_t first; /* the half's first element */
};

/* The row of one function in the quiet half, summed over CPUs, as a report row: 1 when it held data, 0 when empty. */
static int take_row(uint32_t idx, const void *value, void *varg)
{
	struct fl_drain_arg *a = varg;
	struct fl_ctx *ctx = a->ctx;
	const struct fl_target *t = &ctx->t[idx - a->first];
	const struct ks_fl_row *v = value;
	int ncpu = ctx->percpu ? ks_ncpus() : 1;
	__u64 slots[KS_FL_SLOTS] = { 0 }, calls = 0, sum_ns = 0, max_ns = 0, timed = 0;
	struct ks_hist *h;
	struct ks_row *row;

	for (int c = 0; c < ncpu; c++) {
		calls += v[c].calls;
		sum_ns += v[c].sum_ns;
		if (v[c].max_ns > max_ns)
			max_ns = v[c].max_ns;
		for (unsigned int s = 0; s < KS_FL_SLOTS; s++)
			slots[s] += v[c].slot[s];
	}
	for (unsigned int s = 0; s < KS_FL_SLOTS; s++)
		timed += slots[s];
	if (!calls && !timed)
		return 0;
	h = calloc(1, sizeof(*h));
	row = h ? ks_report_add_row(a->r) : NULL;
	if (!row) {
		free(h);
		return -ENOMEM;
	}
	ks_hist_add_slots_n(h, slots, KS_FL_SLOTS);
	h->sum = sum_ns;
	h->max = max_ns;
	ks_row_key_str(row, "function", t->func);
	ks_row_key_str(row, "module", t->module);
	ks_row_col(row, &fl_cols[0], calls);
	if (t->kind == FL_USDT) {
		free(h); /* a point, not a call: no time */
	} else {
		ks_row_col(row, &fl_cols[1], sum_ns);
		row->hist = h;
	}
	row->sort = calls;
	return 1;
}

/* Runs the kernel skipped of the programs outside the skeleton: fentry's objects, or their adopted pins. */
static unsigned long long fl_missed(void *vctx)
{
	struct fl_ctx *ctx = vctx;
	unsigned long long missed = 0;

	for (int i = 0; i < ctx->n; i++)
		if (ctx->fobj[i])
			missed += ks_obj_missed(ctx->fobj[i]->obj);
	for (int i = 0; i < ctx->npfds; i++)
		missed += ks_prog_missed(ctx->pfds[i]);
	return missed;
}

/* The rows of half @gen: one element per function, the half's at gen * n. */
static int drain_rows(void *vctx, struct ks_report *r, unsigned int gen, enum ks_drain_mode mode)
{
	struct fl_ctx *ctx = vctx;
	struct ks_funclat *s = ctx->sc.skel;
	struct fl_drain_arg a = { ctx, r, (gen & 1) * (uint32_t)ctx->n };

	return ks_array_drain_mode(bpf_map__fd(s->maps.rows), a.first, (uint32_t)ctx->n, ctx->sc.vbuf,
				   (size_t)(ctx->percpu ? ks_ncpus() : 1) * sizeof(struct ks_fl_row), take_row, &a, mode);
}

static const struct ks_sc_map fl_maps[] = {
	{ "rows", 0, sizeof(struct ks_fl_row), .percpu = true, .drain = drain_rows },
};
static const struct ks_sc_counter fl_counters[] = {
	{ "no_entry", offsetof(struct ks_funclat__bss, lost.no_entry), KS_SC_LOSS },
	{ "too_deep", offsetof(struct ks_funclat__bss, lost.too_deep), KS_SC_LOSS },
	{ "starts_full", offsetof(struct ks_funclat__bss, lost.starts_full), KS_SC_LOSS },
	{ "missed_returns", offsetof(struct ks_funclat__bss, lost.missed_returns), KS_SC_LOSS },
	{ "map_update_failed", offsetof(struct ks_funclat__bss, lost.update_failed), KS_SC_LOSS },
	/* a probe hit inside another BPF program, or kprobe re-entry */
	{ "recursion", 0, KS_SC_RECURSION },
};
static const struct ks_sc_def fl_def = {
	.name = "funclat", .programs = FL_PIN_HOOK, .skel = &ks_funclat_ops,
	.gen_at = offsetof(struct ks_funclat__bss, ks_gen), .maps = fl_maps, .nmaps = 1, .counters = fl_counters,
	.ncounters = sizeof(fl_counters) / sizeof(fl_counters[0]), .configure = configure, .attach = fl_attach,
	.pin = fl_pin, .attached = fl_attached, .missed = fl_missed,
};

/* Core drains (core/scaffold.h); the report says how many functions its rows are of. */
static int fl_drain(void *vctx, struct ks_report *r, enum ks_drain_mode mode)
{
	struct fl_ctx *ctx = vctx;

	if (mode != KS_DRAIN_CLEAR)
		ks_report_meta_num(r, "functions", (uint64_t)ctx->n);
	return ks_sc_drain(&ctx->sc, r, mode);
}

static void fl_close(void *vctx)
{
	struct fl_ctx *ctx = vctx;

	for (int i = 0; i < ctx->nlinks; i++)
		bpf_link__destroy(ctx->links[i]);
	free(ctx->links);
	for (int i = 0; i < ctx->nmlinks; i++)
		close(ctx->mlinks[i]);
	free(ctx->mlinks);
	for (int i = 0; ctx->fobj && i < ctx->n; i++)
		ks_funclat__destroy(ctx->fobj[i]);
	free(ctx->fobj);
	for (int i = 0; i < ctx->npfds; i++)
		close(ctx->pfds[i]);
	free(ctx->pfds);
	ks_sc_close(&ctx->sc);
	for (int i = 0; i < ctx->n; i++) {
		free(ctx->t[i].path);
		free(ctx->t[i].module);
		free(ctx->t[i].func);
		free(ctx->t[i].provider);
		free(ctx->t[i].probe);
	}
	free(ctx->t);
	free(ctx->specs);
	memset(ctx, 0, sizeof(*ctx));
}

const struct ks_collector ks_funclat_collector = {
	.spec = {
		.name = "funclat",
		.summary = "Function calls and latency, a histogram per function: BINARY:FUNCTION (uprobes), "
			   "BINARY:PROVIDER:PROBE (USDT, counted), FUNCTION (kernel); globs such as libc.so.6:malloc*.",
		.args = "TARGET...",
		.common = KS_O_COLLECTOR & ~(unsigned int)KS_O_BY,
	},
	.ctx_size = sizeof(struct fl_ctx),
	.parse_opt = fl_parse_opt,
	.prepare = fl_prepare,
	.open = fl_open,
	.hook = ks_sc_hook,
	.mark = ks_sc_mark,
	.drain = fl_drain,
	.pin = &(const struct ks_pin_ops){ .skel_at = offsetof(struct fl_ctx, sc.skel) },
	.close = fl_close,
	.schema = &fl_schema,
};
