/* `ksight profile`'s engine: perf_event cpu-clock sampling, in-kernel stack counts or copied user stacks, symbolization. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "core/cmd.h"
#include "core/filter.h"
#include "ksight/wall.h"
#include "core/bpfutil.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/names.h"
#include "core/parse.h"
#include "core/probe.h"
#include "core/procfs.h"
#include "profile/blobs.h"
#include "profile/cfi.h"
#include "profile/profile.h"
#include "symbol/symbol.h"
#include "profile.skel.h"

/* Deepest stack kept: the kernel's and the user's part together, plus the comm. */
/* the comm, the user frames with room for inlined calls, the kernel's */
#define MAX_FRAMES (3 * KS_PROF_DEPTH + 1)

/*
 * How often the halves of the stack and count maps are flipped and the old
 * one drained and emptied.  A stack map bucket holds the first stack that
 * hashed to it until the bucket is deleted, so a collision loses the second
 * stack until the next drain: the shorter the period, the fewer distinct
 * stacks share the buckets at once.  Each drain costs a grace period's wait
 * (not CPU) and a system call or two per row and stack.
 */
/*
 * Rows and stacks drained are kept as addresses, symbolized at the end; past
 * this many bytes of them (a long run of many short-lived processes, whose
 * stacks all differ) they are symbolized into the profile at a drain and
 * forgotten.  The kernel's maps bounded them before the periodic drains.
 */
#define RAW_BYTES_MAX (64ull << 20)

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
	int stacks_fd[2]; /* the stack maps' halves */
	unsigned int gen; /* the half the program writes to: ks_gen */
	unsigned int old; /* the half being drained */
	uint8_t *keep;	  /* by stack id of the old half: still referenced by an interval or a row of the other half */
	uint32_t nkeep;	  /* buckets of a stack map: every id is below */
	uint32_t nids;	  /* ids of keep and sid_ips: nkeep, and as many CFI stack ids above (cfi) */
	int cfi_fd;	  /* cfi: the program's cfi_stacks (ids nkeep.. of both halves); -1 otherwise */
	struct ks_cfi_loader *cfi;
	struct ks_cfi_row *cfi_rows; /* the mmap of cfi_rows, cfi_rows_len bytes */
	size_t cfi_rows_len;
	int32_t *sid_ips; /* by stack id of the old half: its number in ips + 2 once copied in this drain, 0 before */
	struct ks_prof_key *bkeys; /* drain_rows_batch's buffers, count_entries rows each, made at its first */
	uint64_t *bvals;
	struct ks_prof_key *bdel;
	bool no_batch; /* the kernel has no batch operations on hashes (before 5.6) */
	struct ks_blobs ips;  /* the stacks drained: their addresses, innermost first */
	struct ks_blobs rows; /* struct raw_row, the count summed: symbolized at the end */
	/* --pprof: the stack being symbolized as locations (root first), and the kernel's mapping (index + 1, 0: none yet) */
	uint32_t loc[MAX_FRAMES], nloc;
	int64_t kmap;
	int err;
};

/* Links a run keeps: one per CPU (perf events; at least two: the tracepoint modes), and wall's three tracepoints after them. */
#define NLINKS(ncpu) (((ncpu) < 2 ? 2 : (ncpu)) + 3)

/*
 * A row of the counts as drained: the stacks are numbers in prof_run.ips,
 * which keeps their addresses (-1: none).  Rows merge by these, so a
 * stack's rows from every drain are one.
 */
struct raw_row {
	uint32_t pid, tid;
	uint16_t sc; /* ks_prof_key.sc */
	uint16_t pad;
	int32_t kstack, ustack;
	char comm[KS_COMM_LEN];
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Reads stack @id of half @sgen into @ips; its depth, 0 for none (an id < 0 is the helper's errno). */
static int read_stack(const struct prof_run *pr, unsigned int sgen, int32_t id, uint64_t *ips)
{
	int depth = 0, fd = pr->stacks_fd[sgen & 1];
	uint32_t key = (uint32_t)id;

	memset(ips, 0, KS_PROF_DEPTH * sizeof(*ips));
	/* ids from nkeep up are the CFI walker's, in its own map with the half in the key */
	if (pr->cfi_fd >= 0 && id >= 0 && (uint32_t)id >= pr->nkeep) {
		fd = pr->cfi_fd;
		key |= sgen & 1 ? KS_CFI_GEN_BIT : 0;
	}
	if (id < 0)
		return 0;
	if (fd == pr->cfi_fd) {
		struct ks_cfi_stack st;

		if (bpf_map_lookup_elem(fd, &key, &st))
			return 0;
		memcpy(ips, st.ips, sizeof(st.ips));
	} else if (bpf_map_lookup_elem(fd, &key, ips)) {
		return 0;
	}
	while (depth < KS_PROF_DEPTH && ips[depth])
		depth++;
	return depth;
}

/* --pprof: the kernel's mapping, [kernel.kallsyms] as perf names it, made at its first frame; its index + 1, or negative errno. */
static int64_t kernel_mapping(struct prof_run *pr)
{
	unsigned char id[64];
	char hex[2 * sizeof(id) + 1] = "";
	struct ks_smapping m = { .file = "[kernel.kallsyms]", .build_id = hex };
	int len;

	if (pr->kmap)
		return pr->kmap;
	len = ks_kernel_build_id(id, sizeof(id));
	for (int i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	ks_ksyms_range(pr->ksyms, &m.start, &m.limit);
	pr->kmap = ks_stacks_mapping(&pr->res->st, &m);
	return pr->kmap;
}

/* --pprof: appends the location of kernel address @addr (0: none, a pseudo-frame) named by frame @fid. */
static int kernel_loc(struct prof_run *pr, uint64_t addr, uint32_t fid)
{
	struct ks_sline l = { .frame = fid };
	int64_t map, li;

	if (!pr->res->st.av)
		return 0;
	map = kernel_mapping(pr);
	if (map < 0)
		return (int)map;
	li = ks_stacks_location(&pr->res->st, (uint32_t)map, addr, &l, 1);
	if (li < 0)
		return (int)li;
	pr->loc[pr->nloc++] = (uint32_t)li;
	return 0;
}

/*
 * --pprof: appends the location of user address @pc of @pid (@ret: a
 * return address) whose frames are @fr[0..k) (the function, then the calls
 * inlined there, outermost first): its mapping, the address (a return
 * address's call, the byte before, as symbolizers look it up) and a source
 * line per frame.
 */
static int user_loc(struct prof_run *pr, uint32_t pid, uint64_t pc, bool ret, const uint32_t *fr, int k)
{
	struct ks_sline lines[KS_UINLINE_MAX + 1];
	char paths[KS_UINLINE_MAX + 1][512];
	struct ks_uwhere w;
	int64_t map = 0, li;

	if (!pr->res->st.av)
		return 0;
	ks_usyms_where(pr->usyms, pid, pc, ret, &w);
	if (w.file) {
		char hex[2 * sizeof(w.build_id) + 1] = "";
		struct ks_smapping m = { w.start, w.limit, w.offset, (char *)w.file, hex };

		for (int i = 0; i < w.build_id_len; i++)
			snprintf(hex + 2 * i, 3, "%02x", w.build_id[i]);
		map = ks_stacks_mapping(&pr->res->st, &m);
		if (map < 0)
			return (int)map;
	}
	/* innermost first; DWARF's lines are too, the outermost k of them these frames' */
	for (int j = 0; j < k; j++) {
		int wl = w.nlines - k + j;

		lines[j] = (struct ks_sline){ .frame = fr[k - 1 - j] };
		if (wl < 0)
			continue;
		lines[j].line = w.lines[wl].line;
		lines[j].file = (char *)w.lines[wl].file;
		/* a path relative to the compile directory: absolute, so that a reader finds the source (pprof -list) */
		if (lines[j].file && lines[j].file[0] != '/' && w.comp_dir) {
			const char *f = lines[j].file;

			snprintf(paths[j], sizeof(paths[j]), "%s/%s", w.comp_dir, f[0] == '.' && f[1] == '/' ? f + 2 : f);
			lines[j].file = paths[j];
		}
	}
	li = ks_stacks_location(&pr->res->st, (uint32_t)map, ret && pc ? pc - 1 : pc, lines, (uint32_t)k);
	if (li < 0)
		return (int)li;
	pr->loc[pr->nloc++] = (uint32_t)li;
	return 0;
}

/* Appends the kernel frames of the stack @kips[0..depth) (innermost first) to @f, outermost first. */
static int add_kernel(struct prof_run *pr, const uint64_t *kips, int depth, uint32_t *f, uint32_t *n)
{
	uint64_t ips[KS_PROF_DEPTH];

	if (depth <= 0)
		return 0;
	memcpy(ips, kips, depth * sizeof(*ips));
	/* at a tracepoint the innermost frames are the tracing's own (bpf_prog_*, bpf_trace_run*, __bpf_trace_*) */
	while (depth > 1 && pr->ksyms && (pr->o->syscalls || pr->o->bio)) {
		const char *leaf = ks_ksyms_name(pr->ksyms, ips[0]);

		if (!leaf || (strncmp(leaf, "bpf_", 4) && strncmp(leaf, "__bpf_trace", 11)))
			break;
		memmove(ips, ips + 1, --depth * sizeof(ips[0]));
	}
	for (int i = depth - 1; i >= 0; i--) {
		/* off-CPU: the stack ends in __schedule; what is above it is the tracing of the switch (ours) */
		if ((pr->o->offcpu || pr->o->wall) && i + 1 < depth && pr->ksyms) {
			const char *prev = ks_ksyms_name(pr->ksyms, ips[i + 1]);

			if (prev && !strcmp(prev, "__schedule"))
				break;
		}
		const char *name = pr->ksyms ? ks_ksyms_name(pr->ksyms, ips[i]) : NULL;
		int64_t fid = ks_stacks_frame(&pr->res->st, name ? name : "[unknown] (kernel)", KS_FK_KERNEL);
		int err;

		if (fid < 0)
			return (int)fid;
		f[(*n)++] = fid;
		/* return addresses are the call's byte after: all but a sample's interrupted leaf (at a
		 * tracepoint, the --stacks modes, every frame is a call's) */
		err = kernel_loc(pr, i || pr->o->offcpu || pr->o->syscalls || pr->o->bio ? ips[i] - 1 : ips[i],
				 (uint32_t)fid);
		if (err)
			return err;
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
		uint32_t first = *n;
		int ni, err;

		if (fid < 0)
			return (int)fid;
		f[(*n)++] = fid;
		/* then the calls inlined there, outermost first: each frame of the source, as perf shows them;
		 * room is kept for the kernel's frames and the rest of the user stack */
		ni = k == KS_UFR_JIT || pr->o->no_inline ? 0
							 : ks_usyms_inlines(pr->usyms, pid, pcs[i], is_ret[i], inl, KS_UINLINE_MAX);
		for (int j = 0; j < ni && *n + (uint32_t)i + KS_PROF_DEPTH + 1 < MAX_FRAMES; j++) {
			/* GCC's DWARF can show a function inlined into its own out-of-line copy: one frame */
			if (j == 0 && !strcmp(inl[0], name))
				continue;
			fid = ks_stacks_frame(&pr->res->st, inl[j], KS_FK_INLINE);
			if (fid < 0)
				return (int)fid;
			f[(*n)++] = fid;
		}
		err = user_loc(pr, pid, pcs[i], is_ret[i], f + first, (int)(*n - first));
		if (err)
			return err;
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
	uint64_t pcs[KS_PROF_DEPTH], kips[KS_PROF_DEPTH];
	bool is_ret[KS_PROF_DEPTH];
	uint32_t f[MAX_FRAMES], n = 0;
	int depth = 0, kdepth, err;
	double t0;

	if (size == sizeof(struct ks_prof_note)) {
		const struct ks_prof_note *nt = data;
		uint32_t pid = nt->pid;

		/* a cfi walk met a pc in no mapping it knows: the tables again, and the maps for the symbols while it lives */
		if (nt->kind == KS_NOTE_CFI_MAPS) {
			if (pr->cfi)
				ks_cfi_load_pid(pr->cfi, pid);
			ks_usyms_mapped(pr->usyms, pid);
			return 0;
		}
		ks_usyms_capture(pr->usyms, pid);
		/* its tables: the walk of its samples stops at the first frame until they are in (cfi_no_proc) */
		if (pr->cfi)
			ks_cfi_load_pid(pr->cfi, pid);
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
	kdepth = read_stack(pr, s->sgen, s->kstack, kips);
	pr->nloc = 0;
	err = comm_frame(pr, s->comm, f, &n);
	if (!err)
		err = add_user(pr, s->pid, pcs, is_ret, depth, f, &n);
	if (!err)
		err = add_kernel(pr, kips, kdepth, f, &n);
	if (!err)
		err = ks_stacks_add(&pr->res->st, f, n, 1);
	if (!err && pr->res->st.av)
		err = ks_stacks_add_sample(&pr->res->st, pr->loc, pr->nloc, s->pid, s->tid, f[0] + 1, 1);
	if (err)
		pr->err = err;
	return err;
}

/* syscalls --stacks: the call itself as the leaf, "syscall:NAME", a kernel frame. */
/* wall --stacks: the root frame "[STATE]" of a row of state @st (ks_prof_key.sc - 1; pprof: a location in no mapping). */
static int state_frame(struct prof_run *pr, uint32_t st, uint32_t *f, uint32_t *n)
{
	static const char *const names[KS_WALL_STATES + 1] = {
		[KS_WALL_ONCPU] = "[cpu_sys]",	  [KS_WALL_RUNNABLE] = "[runnable]",
		[KS_WALL_THROTTLED] = "[throttled]", [KS_WALL_BLKIO] = "[blkio]",
		[KS_WALL_DSTATE] = "[uninterruptible]", [KS_WALL_LOCK] = "[lock]",
		[KS_WALL_NETPIPE] = "[netpipe]",	  [KS_WALL_SLEEP] = "[sleep]",
		[KS_WALL_OTHER_SLEEP] = "[other_sleep]", [KS_WALL_OTHER] = "[other]",
		[KS_WALL_STACK_USER] = "[cpu_user]",
	};
	struct ks_sline l;
	int64_t fid, li;

	fid = ks_stacks_frame(&pr->res->st, st <= KS_WALL_STATES ? names[st] : "[unknown]", KS_FK_COMM);
	if (fid < 0)
		return (int)fid;
	f[(*n)++] = (uint32_t)fid;
	if (!pr->res->st.av)
		return 0;
	l = (struct ks_sline){ .frame = (uint32_t)fid };
	li = ks_stacks_location(&pr->res->st, 0, 0, &l, 1);
	if (li < 0)
		return (int)li;
	pr->loc[pr->nloc++] = (uint32_t)li;
	return 0;
}

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
	return kernel_loc(pr, 0, (uint32_t)fid);
}

/*
 * The number in pr->ips of stack @id of half @sgen of the stack maps
 * (copied in when new), or -1 for none; -ENOMEM.  Those of the half being
 * drained are read once a drain: rows share them (one user stack under
 * many kernel stacks), and each read is a system call.
 */
static int64_t copy_stack(struct prof_run *pr, unsigned int sgen, int32_t id, uint64_t *depth_out)
{
	int32_t *memo = sgen == pr->old && id >= 0 && (uint32_t)id < pr->nids ? &pr->sid_ips[id] : NULL;
	uint64_t ips[KS_PROF_DEPTH];
	int64_t b;
	int depth;

	if (memo && *memo) {
		b = *memo - 2;
		*depth_out = b >= 0 ? pr->ips.len[b] / sizeof(ips[0]) : 0;
		return b;
	}
	depth = read_stack(pr, sgen, id, ips);
	*depth_out = depth;
	b = depth ? ks_blobs_add(&pr->ips, ips, depth * sizeof(ips[0]), 0) : -1;
	if (memo && b >= -1)
		*memo = (int32_t)(b + 2);
	return b;
}

/*
 * One row of the counts, drained: its stacks are copied out of the stack
 * map half it names now (the ids may be reused once the half is emptied)
 * and the row counted by those copies.  Symbolized at the end (rows_to_stacks);
 * the processes' mappings were captured at their first stack (ks_prof_note).
 */
static int count_row(const void *key, const void *value, void *arg)
{
	const struct ks_prof_key *k = key;
	struct prof_run *pr = arg;
	uint64_t count = *(const uint64_t *)value, kdepth, udepth;
	struct raw_row r = { .pid = k->pid, .tid = k->tid, .sc = k->sc };
	int64_t ks = copy_stack(pr, k->sgen, k->kstack, &kdepth), us = copy_stack(pr, k->sgen, k->ustack, &udepth);

	if (ks == -ENOMEM || us == -ENOMEM)
		return -ENOMEM;
	r.kstack = (int32_t)ks;
	r.ustack = (int32_t)us;
	memcpy(r.comm, k->comm, sizeof(r.comm));
	/* wall: a sample stands for its period of CPU time, in the off-CPU rows' unit (ns) */
	if (pr->o->wall && (k->sc == KS_WALL_ONCPU + 1 || k->sc == KS_WALL_STACK_USER + 1))
		count *= 1000000000ull / pr->o->hz;
	if (us >= 0) {
		pr->res->ustacks += count;
		pr->res->ustack_frames += udepth * count;
	}
	return ks_blobs_add(&pr->rows, &r, sizeof(r), count) < 0 ? -ENOMEM : 0;
}

/* Symbolizes the rows drained into the profile's stacks. */
static int rows_to_stacks(struct prof_run *pr)
{
	uint64_t pcs[KS_PROF_DEPTH];
	bool is_ret[KS_PROF_DEPTH];
	uint32_t f[MAX_FRAMES];
	int err = 0;

	for (size_t i = 0; i < pr->rows.n && !err; i++) {
		const struct raw_row *r = (const struct raw_row *)pr->rows.data[i];
		const uint64_t *kips = r->kstack >= 0 ? (const uint64_t *)pr->ips.data[r->kstack] : NULL;
		int kdepth = r->kstack >= 0 ? (int)(pr->ips.len[r->kstack] / sizeof(*kips)) : 0, depth = 0;
		uint32_t n = 0;

		if (r->ustack >= 0) {
			depth = pr->ips.len[r->ustack] / sizeof(pcs[0]);
			memcpy(pcs, pr->ips.data[r->ustack], depth * sizeof(pcs[0]));
			/* every frame but the interrupted ones is a return address: the leaf, and (cfi) the code a
			 * signal interrupted, marked by the walk */
			for (int d = 0; d < depth; d++) {
				is_ret[d] = d > 0 && !(pcs[d] & KS_CFI_IP_EXACT);
				pcs[d] &= ~KS_CFI_IP_EXACT;
			}
		}
		pr->nloc = 0;
		/* wall: the state is the root, above the process, so that the widest bar is where the time went */
		err = pr->o->wall ? state_frame(pr, r->sc - 1, f, &n) : 0;
		if (!err)
			err = comm_frame(pr, r->comm, f, &n);
		if (!err)
			err = add_user(pr, r->pid, pcs, is_ret, depth, f, &n);
		if (!err)
			err = add_kernel(pr, kips, kdepth, f, &n);
		if (!err && r->sc && !pr->o->wall)
			err = syscall_frame(pr, r->sc - 1, f, &n);
		if (!err)
			err = ks_stacks_add(&pr->res->st, f, n, pr->rows.value[i]);
		if (!err && pr->res->st.av)
			err = ks_stacks_add_sample(&pr->res->st, pr->loc, pr->nloc, r->pid, r->tid, f[pr->o->wall] + 1,
						    pr->rows.value[i]);
	}
	return err;
}

/* Symbolizes the rows drained so far into the profile and forgets them and their stacks. */
static int flush_rows(struct prof_run *pr)
{
	int err = rows_to_stacks(pr);

	ks_blobs_free(&pr->rows);
	ks_blobs_free(&pr->ips);
	return err;
}

/* Marks ids @kstack and @ustack of the half being drained as still referenced. */
static void keep_ids(struct prof_run *pr, int32_t kstack, int32_t ustack)
{
	if (kstack >= 0 && (uint32_t)kstack < pr->nids)
		pr->keep[kstack] = 1;
	if (ustack >= 0 && (uint32_t)ustack < pr->nids)
		pr->keep[ustack] = 1;
}

/*
 * ks_hash_drain's choice: the rows of the half being drained.  A row of
 * the other half whose stacks are in this one (an interval that ended since
 * the flip) keeps them, for the drain of its own half.
 */
static bool row_in_half(const void *key, void *arg)
{
	const struct ks_prof_key *k = key;
	struct prof_run *pr = arg;

	if (k->gen == pr->old)
		return true;
	if (k->sgen == pr->old)
		keep_ids(pr, k->kstack, k->ustack);
	return false;
}

/*
 * offcpu and syscalls: the intervals still open keep the stacks they began
 * with.  Read in batches, by bucket: intervals begin and end all the time,
 * and get_next_key from a key just deleted would start over at the first
 * (and again, on a busy host), where a batch's cursor is a bucket number.
 * An interval open throughout the read is seen.
 */
static int keep_open_intervals(struct prof_run *pr)
{
	int fd = bpf_map__fd(pr->skel->maps.off_starts), err = 0;
	uint32_t cap = 1024, batch, *tids = NULL;
	struct ks_prof_start *st = NULL;
	void *in = NULL;
	bool done = false;

	while (!done) {
		uint32_t n = cap;

		if (!tids) {
			tids = malloc(cap * sizeof(*tids));
			st = malloc(cap * sizeof(*st));
			if (!tids || !st) {
				err = -ENOMEM;
				break;
			}
		}
		if (bpf_map_lookup_batch(fd, in, &batch, tids, st, &n, NULL)) {
			if (errno == ENOSPC && cap < (1u << 20)) {
				/* a bucket holds more than the batch: larger buffers, the same cursor */
				cap *= 2;
				free(tids);
				free(st);
				tids = NULL;
				st = NULL;
				continue;
			}
			if (errno != ENOENT) {
				err = -errno;
				break;
			}
			done = true; /* the last batch, n entries in it */
		}
		for (uint32_t i = 0; i < n; i++)
			if (st[i].sgen == pr->old)
				keep_ids(pr, st[i].kstack, st[i].ustack);
		in = &batch;
	}
	free(tids);
	free(st);
	return err;
}

/*
 * wall --stacks, after detaching: each interval still open is counted to
 * the run's end @end_ns (bpf_ktime_get_ns's clock) under its state and
 * stacks, as wall cuts a state open at the window's end.  The programs are
 * gone, so the map stands still and get_next_key walks it whole.
 */
static int count_open_intervals(struct prof_run *pr, uint64_t end_ns)
{
	int fd = bpf_map__fd(pr->skel->maps.off_starts), err = 0;
	uint32_t tid, *prev = NULL;
	struct ks_prof_start st;

	memset(pr->sid_ips, 0, pr->nids * sizeof(*pr->sid_ips)); /* no memo of a drain's half: read each stack */
	pr->old = 2;
	while (!err && !bpf_map_get_next_key(fd, prev, &tid)) {
		prev = &tid;
		if (bpf_map_lookup_elem(fd, &tid, &st) || st.ts >= end_ns)
			continue;
		struct ks_prof_key k = { .pid = st.pid, .kstack = st.kstack, .ustack = st.ustack, .sc = st.sc,
					 .sgen = st.sgen, .tid = pr->o->pprof ? tid : 0 };
		uint64_t v = end_ns - st.ts;

		memcpy(k.comm, st.comm, sizeof(k.comm));
		err = count_row(&k, &v, pr);
	}
	return err;
}

/*
 * Deletes every stack of the old half that nothing references any more.
 * The ids are gathered first: get_next_key from an id just deleted starts
 * over at the first one.
 */
static int empty_stacks(struct prof_run *pr)
{
	int fd = pr->stacks_fd[pr->old];
	uint32_t *ids = malloc(pr->nkeep * sizeof(*ids)), id, *prev = NULL, n = 0;

	if (!ids)
		return -ENOMEM;
	while (n < pr->nkeep && !bpf_map_get_next_key(fd, prev, &id)) {
		prev = &id;
		if (!pr->keep[id % pr->nkeep])
			ids[n++] = id;
	}
	for (uint32_t i = 0; i < n; i++)
		bpf_map_delete_elem(fd, &ids[i]);
	/* cfi: the walker's stacks of this half, keyed id | half */
	n = 0;
	prev = NULL;
	while (pr->cfi_fd >= 0 && n < pr->nkeep && !bpf_map_get_next_key(pr->cfi_fd, prev, &id)) {
		uint32_t sid = id & ~KS_CFI_GEN_BIT;

		prev = &id;
		if (!!(id & KS_CFI_GEN_BIT) == pr->old && (sid >= pr->nids || !pr->keep[sid]))
			ids[n++] = id;
	}
	for (uint32_t i = 0; i < n; i++)
		bpf_map_delete_elem(pr->cfi_fd, &ids[i]);
	free(ids);
	return 0;
}

/*
 * The rows of half pr->old, counted (count_row) and deleted: the whole
 * count map read in batches and the rows taken deleted in one, where a
 * key at a time (ks_hash_drain) made three system calls a row, every
 * drain.  Nothing writes to the old half (ks_gen_flip waited for the
 * programs), so the values read are final.  -EOPNOTSUPP where the kernel
 * has no batch operations on hashes, or a batch does not fit: the caller
 * drains key by key.
 */
static int drain_rows_batch(struct prof_run *pr)
{
	int fd = bpf_map__fd(pr->skel->maps.counts), err = 0;
	uint32_t cap = (uint32_t)pr->res->count_entries, got = 0, ndel = 0, batch;
	void *in = NULL;

	if (!pr->bkeys || !pr->bvals || !pr->bdel) {
		free(pr->bkeys);
		free(pr->bvals);
		free(pr->bdel);
		pr->bkeys = malloc(cap * sizeof(*pr->bkeys));
		pr->bvals = malloc(cap * sizeof(*pr->bvals));
		pr->bdel = malloc(cap * sizeof(*pr->bdel));
		if (!pr->bkeys || !pr->bvals || !pr->bdel)
			return -ENOMEM;
	}
	for (;;) {
		uint32_t n = cap - got;

		if (!n)
			return -EOPNOTSUPP; /* more rows than the map holds: it changed under the read */
		if (bpf_map_lookup_batch(fd, in, &batch, pr->bkeys + got, pr->bvals + got, &n, NULL)) {
			if (errno != ENOENT)
				return -EOPNOTSUPP; /* EINVAL, ENOTSUPP: none; ENOSPC: a bucket past the room */
			got += n; /* the last batch */
			break;
		}
		got += n;
		in = &batch;
	}
	for (uint32_t i = 0; i < got && !err; i++) {
		if (!row_in_half(&pr->bkeys[i], pr))
			continue;
		err = count_row(&pr->bkeys[i], &pr->bvals[i], pr);
		pr->bdel[ndel++] = pr->bkeys[i];
	}
	if (ndel && bpf_map_delete_batch(fd, pr->bdel, &ndel, NULL) && !err)
		err = -errno;
	return err;
}

/*
 * Drains half @old of the counts into the profile, the program writing to
 * the other half and none still writing to this one (ks_gen_flip waited).
 * @empty: then deletes this half's stacks but those an open interval or a
 * row of the other half still names.  The open intervals are read before
 * the rows: an interval that ends meanwhile counts its row before it goes
 * (end_interval), so its stacks are kept by one or the other.
 */
static int drain_half(struct prof_run *pr, unsigned int old, bool empty)
{
	uint64_t value;
	int err = -EOPNOTSUPP;

	pr->old = old;
	memset(pr->keep, 0, pr->nids);
	memset(pr->sid_ips, 0, pr->nids * sizeof(*pr->sid_ips));
	if (empty && (pr->o->offcpu || pr->o->syscalls || pr->o->wall)) {
		err = keep_open_intervals(pr);
		if (err)
			return err;
	}
	if (!pr->no_batch)
		err = drain_rows_batch(pr);
	if (err == -EOPNOTSUPP) {
		pr->no_batch = true;
		err = ks_hash_drain(bpf_map__fd(pr->skel->maps.counts), sizeof(struct ks_prof_key), row_in_half, count_row,
				    pr, &value);
	}
	if (!err && empty)
		err = empty_stacks(pr);
	return err;
}

/*
 * The periodic drain: flips the halves, waits for the programs, reads what
 * the ring holds (the notes of new processes, whose mappings are captured
 * while they live; the dwarf samples, whose kernel stacks are in the old
 * half), then drains the old half, and symbolizes what was drained when it
 * has grown past RAW_BYTES_MAX.  A read cut short (the run's end) leaves
 * the half for the last drain, which takes both.
 */
static int drain_period(struct prof_run *pr, struct ring_buffer *rb)
{
	unsigned int old = ks_gen_flip(&pr->gen, &pr->skel->bss->ks_gen);
	int err;

	if (ring_buffer__consume(rb) < 0)
		return 0;
	if (pr->usyms)
		ks_usyms_refresh(pr->usyms);
	err = drain_half(pr, old, true);
	if (!err && pr->rows.bytes + pr->ips.bytes > RAW_BYTES_MAX)
		err = flush_rows(pr);
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
	/* wall: the off-CPU states at sched_switch and sched_wakeup, after the CPUs' links; then the samples */
	if (o->wall) {
		struct bpf_program *progs[3] = { pr->skel->progs.on_switch, pr->skel->progs.on_wall_wakeup,
						  pr->skel->progs.on_wall_wakeup_new };

		for (int i = 0; i < 3; i++) {
			links[NLINKS(ncpu) - 3 + i] = bpf_program__attach(progs[i]);
			if (!links[NLINKS(ncpu) - 3 + i]) {
				err = -errno;
				p_err("cannot attach to sched_switch/sched_wakeup/sched_wakeup_new: %s", strerror(-err));
				return err;
			}
		}
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
 * sixteenth to counts, two halves of 3.9k stacks of 127 frames (4096
 * buckets each) and 40k (process, kernel stack, user stack) rows at the
 * default 64M, 13 MiB at load with the rest (37 MiB when they took half and
 * a quarter).  The halves are drained every KS_PROFILE_DRAIN_MS, so they hold one
 * period's stacks: some hundreds on a busy 2-CPU host, system-wide
 * syscalls.  What does not fit, or collides, is counted lost (stack_errors,
 * map_full) as before.  --max-memory raises both.
 */
static int size_maps(void *arg)
{
	const struct prof_size *ps = arg;
	const struct ks_profile_opts *o = ps->o;
	struct ks_profile_result *res = ps->res;
	struct ks_profile *skel = ps->skel;
	/*
	 * The hashes of counts and walked stacks are allocated as rows are
	 * made where the kernel lets a perf_event program use such a map (6.1+):
	 * preallocated, their budget's rows cost 20 ms of kernel time at each
	 * start (pcpu_freelist_populate, page clearing), a tenth of a 10 s
	 * system-wide profile's CPU, for rows a run mostly never uses.
	 */
	uint32_t hflags = ks_probe(KS_FEAT_DYN_HASH)->ok ? BPF_F_NO_PREALLOC : 0;
	uint64_t sbytes = ks_budget_row_bytes(&res->budget, BPF_MAP_TYPE_STACK_TRACE, 4, KS_PROF_DEPTH * 8, 0);
	uint64_t cbytes = ks_budget_row_bytes(&res->budget, BPF_MAP_TYPE_HASH, sizeof(struct ks_prof_key), 8, hflags);
	/* dwarf: room for a second of samples at HZ on every CPU (a quarter lost 4-12% of them to a busy
	 * unwinder: ring_full), a power of two within a quarter of the budget; otherwise only the
	 * notes of new processes */
	uint64_t want = o->dwarf ? (uint64_t)sizeof(struct ks_prof_sample) * (o->hz + 4) * (uint64_t)ps->ncpu : 0;
	uint64_t cap = ks_budget_rows(&res->budget, 0.25, 1, 1u << 16, 1u << 30, true), rb_size = 1u << 16;

	/* two halves of the stack maps, an eighth of the budget together; the counts' halves share one map */
	res->stack_entries = ks_budget_rows(&res->budget, 1.0 / 16, sbytes, 64, 1u << 16, false);
	res->count_entries = ks_budget_rows(&res->budget, 1.0 / 16, cbytes, 64, 1u << 20, false);
	/* cfi: the walker's user stacks are in cfi_stacks (sized below from stack_entries); the stack
	 * maps keep kernel stacks and a process's first samples by frame pointers (tables not in yet),
	 * half the rows: the default then fits 16 MiB at load at 128 CPUs (21.7 MiB when they kept all) */
	uint32_t srows = (uint32_t)(o->cfi ? res->stack_entries / 2 : res->stack_entries);

	bpf_map__set_max_entries(skel->maps.stacks0, srows);
	bpf_map__set_max_entries(skel->maps.stacks1, srows);
	bpf_map__set_max_entries(skel->maps.counts, (uint32_t)res->count_entries);
	bpf_map__set_map_flags(skel->maps.counts, hflags);
	if (o->offcpu || o->syscalls || o->wall)
		bpf_map__set_max_entries(skel->maps.off_starts,
					 ks_budget_rows(&res->budget, 0.1,
							ks_budget_row_bytes(&res->budget, BPF_MAP_TYPE_LRU_HASH, 4,
									    sizeof(struct ks_prof_key) + 16, 0),
							1024, 1u << 18, false));
	/*
	 * cfi: the tables (a row is 8 bytes: libc's 19k rows, a large C++
	 * program's some hundreds of thousands; 690k for the 65 modules of a
	 * small host's 10 sampled processes) take an eighth of the budget, 1M
	 * rows at the default 64M; the processes' mapping lists (2 KiB each,
	 * allocated at load) a sixty-fourth, 490 processes (LRU: one forgotten
	 * walks by frame pointers, counted no_process, until it is loaded
	 * again); the walked stacks as many as stack_entries, both halves in one
	 * hash; the walk's frames one entry per possible CPU.
	 */
	if (o->cfi) {
		uint32_t nkeep = ks_pow2_at_least(res->stack_entries, 1u << 31); /* as ks_profile_start computes it */
		uint64_t pbytes = ks_budget_row_bytes(&res->budget, BPF_MAP_TYPE_LRU_HASH, 4, sizeof(struct ks_cfi_proc), 0);
		uint64_t cfbytes = ks_budget_row_bytes(&res->budget, BPF_MAP_TYPE_HASH, 4, sizeof(struct ks_cfi_stack), hflags);
		uint32_t rows = ks_budget_rows(&res->budget, 1.0 / 8, sizeof(struct ks_cfi_row), 4096, 1u << 26, false);

		bpf_map__set_max_entries(skel->maps.cfi_rows, rows);
		bpf_map__set_max_entries(skel->maps.cfi_procs, ks_budget_rows(&res->budget, 1.0 / 64, pbytes, 64, 1u << 16, false));
		bpf_map__set_max_entries(skel->maps.cfi_stacks,
					 ks_budget_rows(&res->budget, 1.0 / 8, cfbytes, 128, 2 * nkeep, false));
		bpf_map__set_map_flags(skel->maps.cfi_stacks, hflags);
		bpf_map__set_max_entries(skel->maps.cfi_scratch, (uint32_t)ps->ncpu);
		skel->rodata->cfi_base = nkeep;
		/* 16 ids a stack the map holds: 600 distinct stacks of a busy 2-CPU host in 8 s lost 132 of
		 * 1542 samples to collisions over 4096 ids */
		skel->rodata->cfi_mask = KS_CFI_ID_SPREAD * nkeep - 1;
	}
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

/* -t: the tables of the thread's process (its Tgid), as -p loads its own. */
static void load_tid_process(struct ks_cfi_loader *cfi, uint32_t tid)
{
	char path[64], line[128];
	unsigned tgid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/status", tid);
	f = fopen(path, "re");
	if (!f)
		return; /* gone: nothing to sample */
	while (fgets(line, sizeof(line), f) && sscanf(line, "Tgid: %u", &tgid) != 1)
		;
	fclose(f);
	if (tgid)
		ks_cfi_load_pid(cfi, tgid);
}

struct ks_profiler {
	struct prof_run pr;
	struct ring_buffer *rb;
	struct bpf_link **links;
	int ncpu;
};

int ks_profiler_fd(const struct ks_profiler *p)
{
	return ring_buffer__epoll_fd(p->rb);
}

int ks_profiler_tick(struct ks_profiler *p, double end)
{
	int err;

	p->pr.end = end; /* a long read is cut at the end (on_sample) */
	err = drain_period(&p->pr, p->rb);
	if (err)
		p_err("cannot drain the stacks: %s", strerror(-err));
	return err ? err : p->pr.err ? KS_LOOP_DONE : 0;
}

int ks_profiler_flush(struct ks_profiler *p)
{
	int err = drain_period(&p->pr, p->rb);

	if (!err)
		err = flush_rows(&p->pr);
	if (err)
		p_err("cannot symbolize the stacks: %s", strerror(-err));
	return err;
}

int ks_profiler_ready(struct ks_profiler *p, double end)
{
	int r;

	p->pr.end = end;
	r = ring_buffer__poll(p->rb, 0);
	if (r < 0 && r != -EINTR) {
		p_err("cannot read samples: %s", strerror(-r));
		return r;
	}
	return p->pr.err ? KS_LOOP_DONE : 0;
}

int ks_profile_start(const struct ks_profile_opts *o, struct ks_profile_result *res, struct ks_profiler **out)
{
	struct ks_profiler *p = calloc(1, sizeof(*p));
	struct prof_run *pr = p ? &p->pr : NULL;
	struct ring_buffer *rb = NULL;
	struct bpf_link **links = NULL;
	int ncpu = libbpf_num_possible_cpus(), err;
	struct rlimit nofile;

	*out = NULL;
	/* the files captured are kept open (they may be deleted or in a container that goes away):
	 * each distinct one in fp mode, each process's in dwarf mode; the soft limit on descriptors
	 * is raised to the hard one, no privilege needed */
	if (!getrlimit(RLIMIT_NOFILE, &nofile) && nofile.rlim_cur < nofile.rlim_max) {
		nofile.rlim_cur = nofile.rlim_max;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
	memset(res, 0, sizeof(*res));
	if (o->offcpu)
		ks_stacks_init(&res->st, "offcpu", "nanoseconds", 0);
	else if (o->wall)
		ks_stacks_init(&res->st, "wall", "nanoseconds", 0);
	else if (o->syscalls)
		ks_stacks_init(&res->st, "syscalls", "nanoseconds", 0);
	else if (o->bio)
		ks_stacks_init(&res->st, "bio", "bytes", 0);
	else
		ks_stacks_init(&res->st, "samples", "count", o->hz ? 1000000000ull / o->hz : 0);
	/* after res is set up: the caller frees it whatever this returns */
	if (!p)
		return -ENOMEM;
	pr->o = o;
	pr->res = res;
	pr->cfi_fd = -1;
	p->ncpu = ncpu;
	if (ncpu < 0) {
		free(p);
		return ncpu;
	}
	if (o->pprof && ks_stacks_by_address(&res->st)) {
		free(p);
		return -ENOMEM;
	}
	if (o->kernel) {
		pr->ksyms = ks_ksyms_load(NULL);
		if (pr->ksyms && ks_ksyms_hidden(pr->ksyms)) {
			res->ksyms_hidden = true;
			p_warn("kernel addresses are hidden (kernel.kptr_restrict, or no CAP_SYSLOG): kernel frames "
			       "show as [unknown]; sysctl kernel.kptr_restrict=0 shows them");
		}
	}
	pr->usyms = ks_usyms_new(o->dwarf);
	/* a link per CPU for perf events; the tracepoint modes use up to two */
	links = p->links = calloc(NLINKS(ncpu), sizeof(*links));
	pr->skel = ks_profile__open();
	if (!pr->usyms || !links || !pr->skel) {
		err = pr->skel ? -ENOMEM : -errno;
		p_err("cannot open the profile program: %s", strerror(-err));
		goto out;
	}
	pr->skel->rodata->ks_filter = o->filter;
	pr->skel->rodata->mode = o->dwarf ? KS_PROF_DWARF : o->cfi ? KS_PROF_CFI : KS_PROF_FP;
	pr->skel->rodata->want_kernel = o->kernel;
	pr->skel->rodata->want_user = o->user;
	pr->skel->rodata->want_tid = o->pprof;
	bpf_program__set_autoload(pr->skel->progs.on_sample, !o->offcpu && !o->syscalls && !o->bio);
	bpf_program__set_autoload(pr->skel->progs.on_switch, o->offcpu || o->wall);
	bpf_program__set_autoload(pr->skel->progs.on_wall_wakeup, o->wall);
	bpf_program__set_autoload(pr->skel->progs.on_wall_wakeup_new, o->wall);
	pr->skel->rodata->wall_states = o->wall;
	bpf_program__set_autoload(pr->skel->progs.on_sys_enter, o->syscalls);
	bpf_program__set_autoload(pr->skel->progs.on_sys_exit, o->syscalls);
	bpf_program__set_autoload(pr->skel->progs.on_bio, o->bio);
	pr->skel->rodata->sc_nr = o->syscalls ? o->syscall_nr : -1;
	ks_budget_init_for(&res->budget, o->c);
	{
		struct prof_size ps = { .o = o, .res = res, .skel = pr->skel, .ncpu = ncpu };

		err = ks_budget_fit(&res->budget, pr->skel->obj, size_maps, &ps);
		if (err)
			goto out;
	}
	err = ks_budget_check(&res->budget, pr->skel->obj);
	if (err)
		goto out;
	err = ks_follow_prepare(pr->skel->obj);
	if (!err)
		err = ks_profile__load(pr->skel);
	if (!err)
		err = ks_follow_attach(pr->skel->obj);
	if (err) {
		p_err("cannot load the profile program: %s%s", strerror(-err),
		      err == -EPERM ? " (needs root, or CAP_BPF and CAP_PERFMON)" : "");
		goto out;
	}
	pr->stacks_fd[0] = bpf_map__fd(pr->skel->maps.stacks0);
	pr->stacks_fd[1] = bpf_map__fd(pr->skel->maps.stacks1);
	/* the kernel rounds a stack map's buckets up to a power of two: ids are below that */
	pr->nkeep = ks_pow2_at_least(res->stack_entries, 1u << 31);
	pr->nids = o->cfi ? (1 + KS_CFI_ID_SPREAD) * pr->nkeep : pr->nkeep;
	pr->keep = calloc(pr->nids, 1);
	pr->sid_ips = calloc(pr->nids, sizeof(*pr->sid_ips));
	if (!pr->keep || !pr->sid_ips) {
		err = -ENOMEM;
		p_err("cannot set up the profile: %s", strerror(-err));
		goto out;
	}
	if (o->cfi) {
		uint32_t nrows = bpf_map__max_entries(pr->skel->maps.cfi_rows);
		long pg = sysconf(_SC_PAGESIZE);

		/* the rows are written in place: a module's table is one memcpy, not a system call a row */
		pr->cfi_rows_len = ((size_t)nrows * sizeof(struct ks_cfi_row) + pg - 1) / pg * pg;
		pr->cfi_rows = mmap(NULL, pr->cfi_rows_len, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(pr->skel->maps.cfi_rows), 0);
		if (pr->cfi_rows == MAP_FAILED) {
			pr->cfi_rows = NULL;
			err = -errno;
			p_err("cannot map the CFI table: %s", strerror(-err));
			goto out;
		}
		pr->cfi = ks_cfi_loader_new(pr->cfi_rows, nrows, bpf_map__fd(pr->skel->maps.cfi_procs));
		if (!pr->cfi) {
			err = -ENOMEM;
			p_err("cannot set up the CFI tables: %s", strerror(-err));
			goto out;
		}
		pr->cfi_fd = bpf_map__fd(pr->skel->maps.cfi_stacks);
		/* -p: its tables before the first sample, which would otherwise end at the leaf (no_process)
		 * while they are compiled: ~20 ms here, a second and more under emulation */
		if (o->c->pid)
			ks_cfi_load_pid(pr->cfi, (uint32_t)o->c->pid);
		else if (o->c->tid)
			load_tid_process(pr->cfi, o->c->tid);
	}
	{
		rb = p->rb = ring_buffer__new(bpf_map__fd(pr->skel->maps.samples), on_sample, pr, NULL);
		if (!rb) {
			err = -errno;
			p_err("cannot set up the sample ring buffer: %s", strerror(-err));
			goto out;
		}
	}
	err = attach_all(pr, links, ncpu);
	if (err)
		goto out;
	*out = p;
	return 0;
out:
	ks_profiler_free(p);
	return err;
}

int ks_profiler_finish(struct ks_profiler *p, double start)
{
	struct prof_run *pr = &p->pr;
	const struct ks_profile_opts *o = pr->o;
	struct ks_profile_result *res = pr->res;
	struct bpf_link **links = p->links;
	struct ring_buffer *rb = p->rb;
	int ncpu = p->ncpu, err = 0;
	struct timespec t0;
	uint64_t end_ns;

	res->duration_s = now_s() - start;
	res->st.duration_ns = (uint64_t)(res->duration_s * 1e9);
	/* pprof's time_nanos: the wall clock when the window opened (the loop's start), read back from now */
	clock_gettime(CLOCK_REALTIME, &t0);
	res->st.time_ns = (uint64_t)t0.tv_sec * 1000000000ull + (uint64_t)t0.tv_nsec - res->st.duration_ns;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	end_ns = (uint64_t)t0.tv_sec * 1000000000ull + (uint64_t)t0.tv_nsec;
	for (int i = 0; i < NLINKS(ncpu); i++) {
		bpf_link__destroy(links[i]);
		links[i] = NULL;
	}
	pr->final = true;
	/* programs detached may still be running: their samples are waited for */
	ks_sync_programs();
	if (o->wall)
		err = count_open_intervals(pr, end_ns);
	ring_buffer__consume(rb);
	if (!err)
		err = pr->err;
	/* both halves, kept whole: a row of one may name stacks of the other */
	if (!err && !o->dwarf)
		err = drain_half(pr, pr->gen ^ 1, false);
	if (!err && !o->dwarf)
		err = drain_half(pr, pr->gen, false);
	if (!err)
		err = flush_rows(pr);
	res->stats = pr->skel->bss->stats;
	if (pr->cfi)
		res->cfi = *ks_cfi_loader_stats(pr->cfi);
	if (err && err != -EINTR)
		p_err("cannot build the profile: %s", strerror(-err));
	return err;
}

void ks_profiler_free(struct ks_profiler *p)
{
	struct prof_run *pr;

	if (!p)
		return;
	pr = &p->pr;
	if (p->links)
		for (int i = 0; i < NLINKS(p->ncpu); i++)
			bpf_link__destroy(p->links[i]);
	free(p->links);
	ring_buffer__free(p->rb);
	ks_cfi_loader_free(pr->cfi);
	if (pr->cfi_rows)
		munmap(pr->cfi_rows, pr->cfi_rows_len);
	ks_profile__destroy(pr->skel);
	ks_usyms_free(pr->usyms);
	ks_ksyms_free(pr->ksyms);
	free(pr->keep);
	free(pr->sid_ips);
	free(pr->bkeys);
	free(pr->bvals);
	free(pr->bdel);
	ks_blobs_free(&pr->ips);
	ks_blobs_free(&pr->rows);
	free(p);
}

void ks_profile_result_free(struct ks_profile_result *res)
{
	ks_stacks_free(&res->st);
}
