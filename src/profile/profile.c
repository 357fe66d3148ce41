/* `ksight profile`'s engine: perf_event cpu-clock sampling, in-kernel stack counts or copied user stacks, symbolization. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "core/driver.h"
#include "core/log.h"
#include "core/names.h"
#include "core/parse.h"
#include "core/procfs.h"
#include "profile/profile.h"
#include "symbol/symbol.h"
#include "profile.skel.h"

/* Deepest stack kept: the kernel's and the user's part together, plus the comm. */
/* the comm, the user frames with room for inlined calls, the kernel's */
#define MAX_FRAMES (3 * KS_PROF_DEPTH + 1)

static const struct {
	const char *name;
	uint32_t type;
	uint64_t config;
} events[] = {
	{ "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK },
	{ "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK },
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
	{ "cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES },
	{ "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES },
	{ NULL, 0, 0 },
};

bool ks_profile_event_known(const char *name)
{
	for (int i = 0; events[i].name; i++)
		if (!strcmp(events[i].name, name))
			return true;
	return false;
}

struct prof_run {
	const struct ks_profile_opts *o;
	double end;  /* when the run ends (0: at a signal or the process's exit) */
	bool final;  /* the last drain, after detaching: every sample left is taken */
	struct ks_profile_result *res;
	struct ks_profile *skel;
	struct ks_ksyms *ksyms;
	struct ks_usyms *usyms;
	int stacks_fd;
	int err;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Appends the kernel frames of stack @id (outermost first) to @f. */
static int add_kernel(struct prof_run *pr, int32_t id, uint32_t *f, uint32_t *n)
{
	uint64_t ips[KS_PROF_DEPTH] = { 0 };
	int depth = 0;

	if (id < 0 || bpf_map_lookup_elem(pr->stacks_fd, &id, ips))
		return 0;
	while (depth < KS_PROF_DEPTH && ips[depth])
		depth++;
	/* at a tracepoint the innermost frames are the tracing's own (bpf_prog_*, bpf_trace_run*, __bpf_trace_*) */
	while (depth > 1 && pr->ksyms && (pr->o->syscalls || pr->o->bio)) {
		const char *leaf = ks_ksyms_name(pr->ksyms, ips[0]);

		if (!leaf || (strncmp(leaf, "bpf_", 4) && strncmp(leaf, "__bpf_trace", 11)))
			break;
		memmove(ips, ips + 1, --depth * sizeof(ips[0]));
	}
	for (int i = depth - 1; i >= 0; i--) {
		/* off-CPU: the stack ends in __schedule; what is above it is the tracing of the switch (ours) */
		if (pr->o->offcpu && i + 1 < depth && pr->ksyms) {
			const char *prev = ks_ksyms_name(pr->ksyms, ips[i + 1]);

			if (prev && !strcmp(prev, "__schedule"))
				break;
		}
		const char *name = pr->ksyms ? ks_ksyms_name(pr->ksyms, ips[i]) : NULL;
		int64_t fid = ks_stacks_frame(&pr->res->st, name ? name : "[unknown] (kernel)", KS_FK_KERNEL);

		if (fid < 0)
			return (int)fid;
		f[(*n)++] = fid;
	}
	return 0;
}

/* Appends user frames @pcs (innermost first) to @f, outermost first. */
static int add_user(struct prof_run *pr, uint32_t pid, const uint64_t *pcs, const bool *is_ret, int depth,
		    uint32_t *f, uint32_t *n)
{
	char name[256];
	ks_uinline_name inl[KS_UINLINE_MAX];

	for (int i = depth - 1; i >= 0; i--) {
		enum ks_ufr_kind k = ks_usyms_name(pr->usyms, pid, pcs[i], is_ret[i], name, sizeof(name));
		int64_t fid = ks_stacks_frame(&pr->res->st, name, k == KS_UFR_JIT ? KS_FK_JIT : KS_FK_USER);
		int ni;

		if (fid < 0)
			return (int)fid;
		f[(*n)++] = fid;
		/* then the calls inlined there, outermost first: each frame of the source, as perf shows them;
		 * room is kept for the kernel's frames and the rest of the user stack */
		ni = k == KS_UFR_JIT ? 0 : ks_usyms_inlines(pr->usyms, pid, pcs[i], is_ret[i], inl, KS_UINLINE_MAX);
		for (int j = 0; j < ni && *n + (uint32_t)i + KS_PROF_DEPTH + 1 < MAX_FRAMES; j++) {
			/* GCC's DWARF can show a function inlined into its own out-of-line copy: one frame */
			if (j == 0 && !strcmp(inl[0], name))
				continue;
			fid = ks_stacks_frame(&pr->res->st, inl[j], KS_FK_INLINE);
			if (fid < 0)
				return (int)fid;
			f[(*n)++] = fid;
		}
	}
	return 0;
}

static int comm_frame(struct prof_run *pr, const char *comm, uint32_t *f, uint32_t *n)
{
	char c[KS_COMM_LEN + 1] = { 0 };
	int64_t fid;

	memcpy(c, comm, KS_COMM_LEN);
	fid = ks_stacks_frame(&pr->res->st, c[0] ? c : "[unknown]", KS_FK_COMM);
	if (fid < 0)
		return (int)fid;
	f[(*n)++] = fid;
	return 0;
}

/* A --call-graph dwarf sample: unwind now, while the process and its mappings are there. */
static int handle_sample(struct prof_run *pr, void *data, size_t size);

/*
 * The ring buffer's callback.  ring_buffer__poll returns only once the
 * ring is empty: where unwinding (and capturing new processes) takes
 * longer than the samples keep coming, as on a busy machine with many
 * short-lived processes, it would never return, and the run would go on
 * past -d and Ctrl-C.  A negative return ends the poll, the sample taken.
 */
static int on_sample(void *ctx, void *data, size_t size)
{
	struct prof_run *pr = ctx;
	int err = handle_sample(pr, data, size);

	if (!err && !pr->final && (ks_stop_signal || (pr->end && now_s() >= pr->end)))
		return -EINTR;
	return err;
}

static int handle_sample(struct prof_run *pr, void *data, size_t size)
{
	const struct ks_prof_sample *s = data;
	uint64_t pcs[KS_PROF_DEPTH];
	bool is_ret[KS_PROF_DEPTH];
	uint32_t f[MAX_FRAMES], n = 0;
	int depth = 0, err;
	double t0;

	if (size == sizeof(struct ks_prof_note)) {
		ks_usyms_capture(pr->usyms, ((const struct ks_prof_note *)data)->pid);
		return 0;
	}
	if (size < sizeof(*s))
		return 0;
	if (s->regs[16] && s->pid) {
		t0 = now_s();
		depth = ks_usyms_unwind(pr->usyms, s->pid, s->tid, (const uint64_t *)s->regs, s->stack, s->stack_len, pcs, is_ret,
					KS_PROF_DEPTH);
		pr->res->unwind_ns += (uint64_t)((now_s() - t0) * 1e9);
		if (depth < 0)
			depth = 0;
		pr->res->unwound++;
		pr->res->user_frames += depth;
	}
	err = comm_frame(pr, s->comm, f, &n);
	if (!err)
		err = add_user(pr, s->pid, pcs, is_ret, depth, f, &n);
	if (!err)
		err = add_kernel(pr, s->kstack, f, &n);
	if (!err)
		err = ks_stacks_add(&pr->res->st, f, n, 1);
	if (err)
		pr->err = err;
	return err;
}

/* syscalls --stacks: the call itself as the leaf, "syscall:NAME", a kernel frame. */
static int syscall_frame(struct prof_run *pr, uint32_t nr, uint32_t *f, uint32_t *n)
{
	const char *name = ks_syscall_name((int)nr);
	char buf[48];
	int64_t fid;

	if (name)
		snprintf(buf, sizeof(buf), "syscall:%s", name);
	else
		snprintf(buf, sizeof(buf), "syscall:%u", nr);
	fid = ks_stacks_frame(&pr->res->st, buf, KS_FK_KERNEL);
	if (fid < 0)
		return (int)fid;
	f[(*n)++] = fid;
	return 0;
}

/* Turns the in-kernel counts into stacks (after detaching: nothing is added meanwhile). */
static int drain_counts(struct prof_run *pr)
{
	int fd = bpf_map__fd(pr->skel->maps.counts);
	struct ks_prof_key k, *prev = NULL;
	uint64_t ips[KS_PROF_DEPTH], pcs[KS_PROF_DEPTH];
	bool is_ret[KS_PROF_DEPTH];
	uint32_t f[MAX_FRAMES];
	int err = 0;

	while (!err && !bpf_map_get_next_key(fd, prev, &k)) {
		uint64_t count;
		uint32_t n = 0;
		int depth = 0;

		prev = &k;
		if (bpf_map_lookup_elem(fd, &k, &count))
			continue;
		memset(ips, 0, sizeof(ips));
		if (k.ustack >= 0 && !bpf_map_lookup_elem(pr->stacks_fd, &k.ustack, ips)) {
			while (depth < KS_PROF_DEPTH && ips[depth]) {
				pcs[depth] = ips[depth];
				/* every frame but the interrupted one is a return address */
				is_ret[depth] = depth > 0;
				depth++;
			}
			pr->res->ustacks += count;
			pr->res->ustack_frames += depth * count;
		}
		err = comm_frame(pr, k.comm, f, &n);
		if (!err)
			err = add_user(pr, k.pid, pcs, is_ret, depth, f, &n);
		if (!err)
			err = add_kernel(pr, k.kstack, f, &n);
		if (!err && k.pad)
			err = syscall_frame(pr, k.pad - 1, f, &n);
		if (!err)
			err = ks_stacks_add(&pr->res->st, f, n, count);
	}
	return err;
}

static int open_event(const struct ks_profile_opts *o, int ev, int cpu)
{
	struct perf_event_attr a = {
		.size = sizeof(a),
		.type = events[ev].type,
		.config = events[ev].config,
		.freq = 1,
		.sample_freq = o->hz,
	};
	int fd = syscall(__NR_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/* Opens the event on every selected online CPU and attaches the program; the links go to @links. */
static int attach_all(struct prof_run *pr, struct bpf_link **links, int ncpu)
{
	const struct ks_profile_opts *o = pr->o;
	int ev = 0, fd, attached = 0;
	uint64_t online[KS_MAX_CPUS / 64] = { 0 };
	char list[256];
	int err = 0, n = KS_MAX_CPUS;

	if (o->syscalls || o->bio) {
		struct bpf_program *p1 = o->bio ? pr->skel->progs.on_bio : pr->skel->progs.on_sys_enter;

		links[0] = bpf_program__attach(p1);
		if (links[0] && o->syscalls)
			links[1] = bpf_program__attach(pr->skel->progs.on_sys_exit);
		if (!links[0] || (o->syscalls && !links[1])) {
			err = -errno;
			p_err("cannot attach to %s: %s", o->bio ? "block_bio_queue" : "sys_enter/sys_exit", strerror(-err));
		}
		pr->res->event = o->bio ? "block_bio_queue" : "sys_enter";
		return err;
	}
	if (o->offcpu) {
		/* one program on sched_switch, every CPU */
		links[0] = bpf_program__attach(pr->skel->progs.on_switch);
		if (!links[0]) {
			err = -errno;
			p_err("cannot attach to sched_switch: %s", strerror(-err));
		}
		pr->res->event = "sched_switch";
		return err;
	}
	if (o->event) {
		for (ev = 0; events[ev].name && strcmp(events[ev].name, o->event); ev++)
			;
		if (!events[ev].name)
			return -EINVAL;
	}
	err = ks_procfs_line(NULL, "/sys/devices/system/cpu/online", list, sizeof(list));
	if (!err)
		err = ks_parse_cpulist(list, online, KS_MAX_CPUS);
	if (err) {
		p_err("cannot read the online CPUs: %s", strerror(-err));
		return err;
	}
	for (int cpu = 0; cpu < n && cpu < ncpu; cpu++) {
		if (!(online[cpu / 64] & (1ull << (cpu % 64))))
			continue;
		if (o->c->has_cpus && !(o->c->cpus[cpu / 64] & (1ull << (cpu % 64))))
			continue;
		fd = open_event(o, ev, cpu);
		if (fd < 0 && events[ev].type == PERF_TYPE_HARDWARE && (fd == -ENOENT || fd == -EOPNOTSUPP || fd == -ENODEV)) {
			p_warn("hardware event '%s' is not available on this CPU (%s): sampling cpu-clock instead",
			       events[ev].name, strerror(-fd));
			ev = 0;
			fd = open_event(o, ev, cpu);
		}
		if (fd < 0) {
			err = fd;
			p_err("cannot open perf event '%s' on CPU %d: %s%s", events[ev].name, cpu, strerror(-fd),
			      fd == -EACCES || fd == -EPERM ? " (needs root or CAP_PERFMON)" : "");
			break;
		}
		links[cpu] = bpf_program__attach_perf_event(pr->skel->progs.on_sample, fd);
		if (!links[cpu]) {
			err = -errno;
			close(fd);
			p_err("cannot attach to perf event on CPU %d: %s", cpu, strerror(-err));
			break;
		}
		attached++;
	}
	pr->res->event = events[ev].name;
	if (!err && !attached) {
		p_err("no online CPU in the -C list");
		err = -EINVAL;
	}
	return err;
}

/* ks_budget_fit's sizing step: the profile's map sizes from the budget's limit. */
struct prof_size {
	const struct ks_profile_opts *o;
	struct ks_profile_result *res;
	struct ks_profile *skel;
	int ncpu;
};

/*
 * Map sizes from the budget.  The stack and count maps are allocated in
 * full at load (perf_event programs run in NMI context, where the verifier
 * takes only preallocated hashes before Linux 6.1), so they take what a run
 * needs, not what the budget could hold: an eighth of it to stacks and a
 * sixteenth to counts, 7.8k stacks of 127 frames and 40k (process, kernel
 * stack, user stack) rows at the default 64M, 13 MiB at load with the rest
 * (37 MiB when they took half and a quarter).  A 60 s -F 49 run of a busy 2-CPU host uses a few hundred stacks, a
 * 128-CPU one some thousands; past that samples are counted lost
 * (stack_errors, map_full) as before.  --max-memory raises both.
 */
static int size_maps(void *arg)
{
	const struct prof_size *ps = arg;
	const struct ks_profile_opts *o = ps->o;
	struct ks_profile_result *res = ps->res;
	struct ks_profile *skel = ps->skel;
	uint64_t sbytes = ks_budget_row_bytes(&res->budget, BPF_MAP_TYPE_STACK_TRACE, 4, KS_PROF_DEPTH * 8, 0);
	uint64_t cbytes = ks_budget_row_bytes(&res->budget, BPF_MAP_TYPE_HASH, sizeof(struct ks_prof_key), 8, 0);
	/* dwarf: room for a quarter second of samples at HZ on every CPU, a power of two; otherwise only the
	 * notes of new processes */
	uint64_t want = o->dwarf ? (uint64_t)sizeof(struct ks_prof_sample) * (o->hz / 4 + 4) * (uint64_t)ps->ncpu : 0;
	uint64_t cap = ks_budget_rows(&res->budget, 0.25, 1, 1u << 16, 1u << 30, true), rb_size = 1u << 16;

	res->stack_entries = ks_budget_rows(&res->budget, 1.0 / 8, sbytes, 64, 1u << 16, false);
	res->count_entries = ks_budget_rows(&res->budget, 1.0 / 16, cbytes, 64, 1u << 20, false);
	bpf_map__set_max_entries(skel->maps.stacks, (uint32_t)res->stack_entries);
	bpf_map__set_max_entries(skel->maps.counts, (uint32_t)res->count_entries);
	if (o->offcpu || o->syscalls)
		bpf_map__set_max_entries(skel->maps.off_starts,
					 ks_budget_rows(&res->budget, 0.1,
							ks_budget_row_bytes(&res->budget, BPF_MAP_TYPE_LRU_HASH, 4,
									    sizeof(struct ks_prof_key) + 16, 0),
							1024, 1u << 18, false));
	while (rb_size < want && rb_size < cap)
		rb_size <<= 1;
	bpf_map__set_max_entries(skel->maps.samples, (uint32_t)rb_size);
	bpf_map__set_max_entries(skel->maps.seen, o->dwarf || !o->user ? 1 : 8192);
	return 0;
}

int ks_profile_measure(const struct ks_profile_opts *o)
{
	struct ks_profile_result res;
	struct prof_size ps = { .o = o, .res = &res, .ncpu = libbpf_num_possible_cpus() };
	int err;

	if (ps.ncpu < 0)
		return ps.ncpu;
	memset(&res, 0, sizeof(res));
	ps.skel = ks_profile__open();
	if (!ps.skel)
		return -errno;
	ks_budget_init_for(&res.budget, o->c);
	err = ks_budget_fit(&res.budget, ps.skel->obj, size_maps, &ps);
	ks_profile__destroy(ps.skel);
	return err == -EALREADY ? 0 : err ? err : -EINVAL;
}

int ks_profile_run(const struct ks_profile_opts *o, struct ks_profile_result *res)
{
	struct prof_run pr = { .o = o, .res = res };
	struct ring_buffer *rb = NULL;
	struct bpf_link **links = NULL;
	int ncpu = libbpf_num_possible_cpus(), err;
	double start, end;

	struct rlimit nofile;

	/* every captured process keeps its ELF files open (they may be deleted or in a container
	 * that goes away): the soft limit on descriptors is raised to the hard one, no privilege needed */
	if (!getrlimit(RLIMIT_NOFILE, &nofile) && nofile.rlim_cur < nofile.rlim_max) {
		nofile.rlim_cur = nofile.rlim_max;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
	memset(res, 0, sizeof(*res));
	if (o->offcpu)
		ks_stacks_init(&res->st, "offcpu", "nanoseconds", 0);
	else if (o->syscalls)
		ks_stacks_init(&res->st, "syscalls", "nanoseconds", 0);
	else if (o->bio)
		ks_stacks_init(&res->st, "bio", "bytes", 0);
	else
		ks_stacks_init(&res->st, "samples", "count", o->hz ? 1000000000ull / o->hz : 0);
	if (ncpu < 0)
		return ncpu;
	if (o->kernel) {
		pr.ksyms = ks_ksyms_load(NULL);
		if (pr.ksyms && ks_ksyms_hidden(pr.ksyms)) {
			res->ksyms_hidden = true;
			p_warn("kernel addresses are hidden (kernel.kptr_restrict, or no CAP_SYSLOG): kernel frames "
			       "show as [unknown]; sysctl kernel.kptr_restrict=0 shows them");
		}
	}
	pr.usyms = ks_usyms_new();
	/* a link per CPU for perf events; the tracepoint modes use up to two */
	links = calloc(ncpu < 2 ? 2 : ncpu, sizeof(*links));
	pr.skel = ks_profile__open();
	if (!pr.usyms || !links || !pr.skel) {
		err = pr.skel ? -ENOMEM : -errno;
		p_err("cannot open the profile program: %s", strerror(-err));
		goto out;
	}
	pr.skel->rodata->ks_filter = o->filter;
	pr.skel->rodata->mode = o->dwarf ? KS_PROF_DWARF : KS_PROF_FP;
	pr.skel->rodata->want_kernel = o->kernel;
	pr.skel->rodata->want_user = o->user;
	bpf_program__set_autoload(pr.skel->progs.on_sample, !o->offcpu && !o->syscalls && !o->bio);
	bpf_program__set_autoload(pr.skel->progs.on_switch, o->offcpu);
	bpf_program__set_autoload(pr.skel->progs.on_sys_enter, o->syscalls);
	bpf_program__set_autoload(pr.skel->progs.on_sys_exit, o->syscalls);
	bpf_program__set_autoload(pr.skel->progs.on_bio, o->bio);
	pr.skel->rodata->sc_nr = o->syscalls ? o->syscall_nr : -1;
	ks_budget_init_for(&res->budget, o->c);
	{
		struct prof_size ps = { .o = o, .res = res, .skel = pr.skel, .ncpu = ncpu };

		err = ks_budget_fit(&res->budget, pr.skel->obj, size_maps, &ps);
		if (err)
			goto out;
	}
	err = ks_budget_check(&res->budget, pr.skel->obj);
	if (err)
		goto out;
	err = ks_profile__load(pr.skel);
	if (err) {
		p_err("cannot load the profile program: %s%s", strerror(-err),
		      err == -EPERM ? " (needs root, or CAP_BPF and CAP_PERFMON)" : "");
		goto out;
	}
	pr.stacks_fd = bpf_map__fd(pr.skel->maps.stacks);
	{
		rb = ring_buffer__new(bpf_map__fd(pr.skel->maps.samples), on_sample, &pr, NULL);
		if (!rb) {
			err = -errno;
			p_err("cannot set up the sample ring buffer: %s", strerror(-err));
			goto out;
		}
	}
	err = attach_all(&pr, links, ncpu);
	if (err)
		goto out;
	ks_stop_install();
	fprintf(stderr, "ksight: tracing %s (%s%s)%s\n",
		o->offcpu ? "offcpu --stacks" : o->syscalls ? "syscalls --stacks" : o->bio ? "biolat --stacks" : "profile",
		res->event, o->offcpu || o->syscalls || o->bio ? "" : o->dwarf ? ", dwarf" : ", fp",
		o->c->duration ? "" : o->c->pid ? "; Ctrl-C or the process's exit ends" : "; Ctrl-C to end");
	start = now_s();
	end = o->c->duration > 0 ? start + o->c->duration : 0;
	pr.end = end;
	while (!ks_stop_signal && !pr.err) {
		double t = now_s();
		int r;

		if (end && t >= end)
			break;
		if (o->c->pid && !ks_procfs_pid_exists(NULL, o->c->pid, 0))
			break;
		r = ring_buffer__poll(rb, 100);
		if (r < 0 && r != -EINTR) {
			err = r;
			p_err("cannot read samples: %s", strerror(-r));
			break;
		}
	}
	res->duration_s = now_s() - start;
	for (int i = 0; i < (ncpu < 2 ? 2 : ncpu); i++) {
		bpf_link__destroy(links[i]);
		links[i] = NULL;
	}
	pr.final = true;
	if (!err)
		ring_buffer__consume(rb);
	if (!err)
		err = pr.err;
	if (!err && !o->dwarf)
		err = drain_counts(&pr);
	res->stats = pr.skel->bss->stats;
	if (err && err != -EINTR)
		p_err("cannot build the profile: %s", strerror(-err));
out:
	if (links)
		for (int i = 0; i < (ncpu < 2 ? 2 : ncpu); i++)
			bpf_link__destroy(links[i]);
	free(links);
	ring_buffer__free(rb);
	ks_profile__destroy(pr.skel);
	ks_usyms_free(pr.usyms);
	ks_ksyms_free(pr.ksyms);
	return err;
}

void ks_profile_result_free(struct ks_profile_result *res)
{
	ks_stacks_free(&res->st);
}
