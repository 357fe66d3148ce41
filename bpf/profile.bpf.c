/* Kernel side of `ksight profile` and `offcpu --stacks`: on-CPU samples from a perf_event, or off-CPU time at sched_switch, by (pid, kernel stack, user stack). */
#include "common.bpf.h"
#include "compat.bpf.h"
#include "ksight/profile.h"
#include "wall_state.bpf.h"

const volatile __u32 mode = KS_PROF_FP;
const volatile bool want_kernel = true;
const volatile bool want_user = true;
/* --pprof: counts by thread (its samples name the tid); else by process, fewer rows to drain */
const volatile bool want_tid = false;
/* wall --stacks: samples and off-CPU intervals by the state of `ksight wall` (ks_prof_key.sc = state + 1) */
const volatile bool wall_states = false;

struct ks_prof_stats stats = {};

/*
 * The half of the stack maps and counts samples go to; user space flips it
 * and drains the other half.  A stack map has no chaining: a stack whose
 * bucket another holds is lost (-EEXIST) until that one is deleted, so the
 * maps are emptied at every drain and a collision costs one period at most.
 */
volatile __u32 ks_gen = 0;

/* Sized by the loader from the memory budget. */
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, KS_PROF_DEPTH * sizeof(__u64));
} stacks0 SEC(".maps"), stacks1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, struct ks_prof_key);
	__type(value, __u64);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} samples SEC(".maps");

/*
 * Pids already announced to user space (ks_prof_note), with the address
 * space (mm) they had: an exec makes a new one, whose mappings must be read
 * too (a shell's child, sampled as the shell, then as what it ran).  LRU: a
 * forgotten one is announced again, harmlessly.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} seen SEC(".maps");

/* A note of @kind about @pid to user space through the ring; false (counted) when it had no room. */
static __always_inline bool send_note(__u32 pid, __u32 kind)
{
	struct ks_prof_note *n = bpf_ringbuf_reserve(&samples, sizeof(*n), 0);

	if (!n) {
		__sync_fetch_and_add(&stats.ring_lost, 1);
		return false;
	}
	n->pid = pid;
	n->kind = kind;
	bpf_ringbuf_submit(n, 0);
	return true;
}

/* Announces @pid once per address space, so that its mappings are read while it lives. */
static __always_inline void note_pid(__u32 pid)
{
	__u64 mm = (__u64)bpf_get_current_task_btf()->mm, *v;

	if (!pid)
		return;
	v = bpf_map_lookup_elem(&seen, &pid);
	if (v) {
		if (*v == mm)
			return;
		*v = mm; /* two CPUs may both announce it: read twice, harmlessly */
	} else {
		long e = bpf_map_update_elem(&seen, &pid, &mm, BPF_NOEXIST);

		/* -EEXIST: another CPU announces it; anything else is a loss */
		if (e) {
			if (e != -17)
				__sync_fetch_and_add(&stats.map_errors, 1);
			return;
		}
	}
	send_note(pid, KS_NOTE_NEW);
}

/* -EFAULT (no stack of that kind at this sample) is not a loss: a sample in user mode has no kernel stack. */
static __always_inline void count_stack_err(__s32 id, __u64 *ctr)
{
	if (id < 0 && id != -14)
		__sync_fetch_and_add(ctr, 1);
}

/* Adds @v to the count of @k (samples, or off-CPU nanoseconds); a full map is counted. */
static __always_inline void count_add(struct ks_prof_key *k, __u64 v)
{
	__u64 *c = bpf_map_lookup_elem(&counts, k);

	if (c) {
		__sync_fetch_and_add(c, v);
		return;
	}
	if (!bpf_map_update_elem(&counts, k, &v, BPF_NOEXIST))
		return;
	c = bpf_map_lookup_elem(&counts, k); /* another CPU made it meanwhile */
	if (c)
		__sync_fetch_and_add(c, v);
	else
		__sync_fetch_and_add(&stats.counts_full, 1);
}

/* A stack's id in half @gen of the stack maps (the helper takes a map known at load, hence two calls). */
static __always_inline __s32 stackid(void *ctx, __u32 gen, __u64 flags)
{
	return gen ? bpf_get_stackid(ctx, &stacks1, flags) : bpf_get_stackid(ctx, &stacks0, flags);
}

/* The current task's kernel and (frame-pointer) user stack ids in half @gen, as wanted; -EFAULT for those not taken. */
static __always_inline __s32 cfi_stack(__u32 pid, __u32 gen);

static __always_inline void take_stacks(void *ctx, __u32 gen, __u32 pid, __s32 *kstack, __s32 *ustack, bool user)
{
	*kstack = -14;
	*ustack = -14;
	if (want_kernel) {
		*kstack = stackid(ctx, gen, 0);
		count_stack_err(*kstack, &stats.kstack_lost);
	}
	if (!user || !want_user)
		return;
	/* cfi: walked here with the compiled tables; a process whose tables are not in yet by frame pointers */
	if (mode == KS_PROF_CFI) {
		*ustack = cfi_stack(pid, gen);
		if (*ustack != -2)
			return;
	}
	*ustack = stackid(ctx, gen, BPF_F_USER_STACK);
	count_stack_err(*ustack, &stats.ustack_lost);
	if (*ustack >= 0)
		note_pid(pid);
}

/*
 * Copies the top of the user stack: KS_PROF_STACK_BYTES, or all of it up to
 * the stack's end where that is nearer.  A read that crosses the end of the
 * mapping fails whole, and the end is a page boundary: so the reads that
 * follow a failed full one stop at each page end below sp + KS_PROF_STACK_BYTES
 * in turn, the largest first.  (Halving the length instead, as before, lost up
 * to half of what was there: the outer frames of a stack within 16 KiB of its
 * end, a thread's or a process started with a small environment.)
 */
#define KS_UPAGE 4096
static __always_inline __u32 copy_stack(__u8 *dst, __u64 sp)
{
	__u64 end = (sp | (KS_UPAGE - 1)) + 1, len;

	if (!bpf_probe_read_user(dst, KS_PROF_STACK_BYTES, (void *)sp))
		return KS_PROF_STACK_BYTES;
#pragma unroll
	for (int k = KS_PROF_STACK_BYTES / KS_UPAGE - 1; k >= 0; k--) {
		/* 64 bits throughout: the verifier must see the bound on the very register passed */
		len = end + (__u64)k * KS_UPAGE - sp;
		if (len == 0 || len > KS_PROF_STACK_BYTES)
			continue;
		if (!bpf_probe_read_user(dst, len, (void *)sp))
			return (__u32)len;
	}
	return 0;
}

static __always_inline int dwarf_sample(void *ctx, __u64 pid_tgid, __s32 kstack, __u32 gen)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct ks_prof_sample *s;
	struct pt_regs *r;

	s = bpf_ringbuf_reserve(&samples, sizeof(*s), 0);
	if (!s) {
		__sync_fetch_and_add(&stats.ring_lost, 1);
		return 0;
	}
	s->pid = pid_tgid >> 32;
	s->tid = (__u32)pid_tgid;
	s->kstack = kstack;
	s->sgen = gen;
	s->pad = 0;
	s->stack_len = 0;
	bpf_get_current_comm(s->comm, sizeof(s->comm));
	__builtin_memset(s->regs, 0, sizeof(s->regs));
	/* the user registers saved at kernel entry: the interrupted ones for a
	 * sample in user mode, those of the syscall for one in the kernel */
	if (want_user && !(t->flags & 0x00200000 /* PF_KTHREAD */)) {
		r = (struct pt_regs *)bpf_task_pt_regs(t);
		s->regs[0] = BPF_CORE_READ(r, ax);
		s->regs[1] = BPF_CORE_READ(r, dx);
		s->regs[2] = BPF_CORE_READ(r, cx);
		s->regs[3] = BPF_CORE_READ(r, bx);
		s->regs[4] = BPF_CORE_READ(r, si);
		s->regs[5] = BPF_CORE_READ(r, di);
		s->regs[6] = BPF_CORE_READ(r, bp);
		s->regs[7] = BPF_CORE_READ(r, sp);
		s->regs[8] = BPF_CORE_READ(r, r8);
		s->regs[9] = BPF_CORE_READ(r, r9);
		s->regs[10] = BPF_CORE_READ(r, r10);
		s->regs[11] = BPF_CORE_READ(r, r11);
		s->regs[12] = BPF_CORE_READ(r, r12);
		s->regs[13] = BPF_CORE_READ(r, r13);
		s->regs[14] = BPF_CORE_READ(r, r14);
		s->regs[15] = BPF_CORE_READ(r, r15);
		s->regs[16] = BPF_CORE_READ(r, ip);
		s->stack_len = copy_stack(s->stack, s->regs[7]);
		if (!s->stack_len)
			__sync_fetch_and_add(&stats.ustack_unread, 1);
	}
	bpf_ringbuf_submit(s, 0);
	return 0;
}

/*
 * --call-graph cfi: user stacks walked here with unwind tables user space
 * compiles from each module's CFI (src/profile/cfi.c) and loads when a
 * process is announced.  Sized by the loader; 1 entry in the other modes.
 */
/*
 * CFI stack ids are cfi_base + (hash & cfi_mask): above the stack maps' ids
 * (below cfi_base), over a range wider than the map holds (a hash, not a
 * stack map's array of buckets), so that distinct stacks rarely collide.
 */
const volatile __u32 cfi_base = 1;
const volatile __u32 cfi_mask = 0;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE); /* user space writes the rows in place */
	__type(key, __u32);
	__type(value, struct ks_cfi_row);
} cfi_rows SEC(".maps");

/* By pid: its executable mappings and their tables.  LRU: a process forgotten is announced again. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ks_cfi_proc);
} cfi_procs SEC(".maps");

/* The stacks walked, by id | half (KS_CFI_GEN_BIT); like a stack map, a collision is counted lost. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ks_cfi_stack);
} cfi_stacks SEC(".maps");

/*
 * The frames of the walk in progress, one entry per possible CPU (a
 * perf_event program does not nest on its CPU): 1 KiB is more than the BPF
 * stack holds.  A plain array indexed by CPU, as the budget counts it.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ks_cfi_stack);
} cfi_scratch SEC(".maps");

struct cfi_walk {
	__u64 pc, sp, bp, hash;
	struct ks_cfi_proc *proc;
	struct ks_cfi_stack *st;
	__u32 n;   /* frames in st */
	__u32 why; /* 0: going on; else the stat that ended the walk (an index into cfi_stop) */
	bool unmapped; /* a pc in no mapping was met: the maps are asked for again */
	bool exact;    /* pc is where the code was interrupted (the leaf, or past a signal frame), not a return address */
};

/* How far above sp a frame pointer followed through unmapped code may point: a thread's stack, 8 MiB by default. */
#define KS_CFI_FP_REACH (8ull << 20)

enum { CW_GO, CW_END, CW_NO_MAP, CW_NO_ROW, CW_UNSUP, CW_FAULT, CW_DEPTH };

/*
 * The largest i in [lo, hi) with rows[i].pc <= rel; -1 for none.  25
 * halvings: tables up to 32M rows.  A global function: the verifier checks
 * it once, alone, where inlined in bpf_loop's callback it was explored with
 * every state of the walk (25 halvings cost 62k of the program's 142k
 * processed instructions, and its load 60 ms of 130).
 */
__noinline int cfi_row_index(__u32 lo, __u32 hi, __u64 rel)
{
	struct ks_cfi_row *r;
	__u32 mid;

	r = bpf_map_lookup_elem(&cfi_rows, &lo);
	if (!r || r->pc > rel)
		return -1;
	for (int k = 0; k < 25 && hi - lo > 1; k++) {
		mid = lo + (hi - lo) / 2;
		r = bpf_map_lookup_elem(&cfi_rows, &mid);
		if (!r)
			return -1;
		if (r->pc <= rel)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* The index of @p's mapping that holds @look; KS_CFI_MAPS for none.  Global, as cfi_row_index, for the verifier. */
__noinline __u32 cfi_map_index(struct ks_cfi_proc *p, __u64 look)
{
	__u32 lo = 0, hi, mid;

	if (!p)
		return KS_CFI_MAPS;
	hi = p->n;
	if (hi > KS_CFI_MAPS)
		hi = KS_CFI_MAPS;
	for (int k = 0; k < 7 && lo < hi; k++) {
		mid = (lo + (hi - lo) / 2) & (KS_CFI_MAPS - 1);
		if (look < p->m[mid].start)
			hi = mid;
		else if (look >= p->m[mid].end)
			lo = mid + 1;
		else
			return mid;
	}
	return KS_CFI_MAPS;
}

/* One frame: from (pc, sp, bp), the caller's; bpf_loop's callback, 1 ends the loop. */
static long cfi_step(__u32 i, void *arg)
{
	struct cfi_walk *w = arg;
	struct ks_cfi_proc *p = w->proc;
	struct ks_cfi_map *m = NULL;
	struct ks_cfi_row *row;
	__u64 pc = w->pc, look, cfa, ra = 0, bp = w->bp, regs[2];
	bool exact = false;
	__u32 n, mi;
	int idx;

	if (!p || !w->st)
		return 1;
	/* a return address's call is the byte before (a signal frame's FDE starts one byte before its restorer, so) */
	look = w->exact ? pc : pc - 1;
	mi = cfi_map_index(p, look);
	/* clang knows the index's range from the callee, and drops the test the verifier needs */
	barrier_var(mi);
	if (mi < KS_CFI_MAPS)
		m = &p->m[mi];
	if (!m) {
		/*
		 * Code in no mapping known: a JIT's (anonymous memory, no CFI; JITs
		 * keep frame pointers), or a library loaded since the maps were
		 * read.  One frame by the frame pointer where it points into the
		 * stack at or above this frame's sp (a caller's call leaves its
		 * pushed rbp right there); else the walk ends here.
		 */
		w->unmapped = true;
		if (bp < w->sp || bp - w->sp > KS_CFI_FP_REACH) {
			w->why = CW_NO_MAP;
			return 1;
		}
		__sync_fetch_and_add(&stats.cfi_unmapped_frames, 1);
	}
	if (!m || !m->nrows) {
		/* no table (none, or it did not fit): the frame pointer, as bpf_get_stackid would */
		cfa = bp + 16;
		if (bpf_probe_read_user(&bp, sizeof(bp), (void *)(bp)))
			goto fault;
		__sync_fetch_and_add(&stats.cfi_fp_frames, 1);
	} else {
		idx = cfi_row_index(m->row, m->row + m->nrows, look - m->bias);
		row = idx >= 0 ? bpf_map_lookup_elem(&cfi_rows, &idx) : NULL;
		if (!row) {
			w->why = CW_NO_ROW;
			return 1;
		}
		switch (row->kind) {
		case KS_CFI_RSP:
			cfa = w->sp + row->cfa_off;
			break;
		case KS_CFI_RBP:
			cfa = bp + row->cfa_off;
			break;
		case KS_CFI_PLT:
			cfa = w->sp + row->cfa_off + ((pc & 15) >= (__u64)row->rbp_off ? 8 : 0);
			break;
		case KS_CFI_SIGNAL:
			/*
			 * The handler returned here, to the restorer: the interrupted rsp
			 * and rip (adjacent) and rbp are in the ucontext at this sp; that
			 * rip is the exact pc the signal came at.
			 */
			if (bpf_probe_read_user(regs, sizeof(regs), (void *)(w->sp + row->cfa_off)))
				goto fault;
			if (row->rbp_off && bpf_probe_read_user(&bp, sizeof(bp), (void *)(w->sp + (__s64)row->rbp_off * 8)))
				goto fault;
			cfa = regs[0];
			ra = regs[1];
			exact = true;
			/* the restorer's own frame is named at its address too, as libdw does (not the FDE's padding byte) */
			n = w->n - 1;
			if (n < KS_PROF_DEPTH)
				w->st->ips[n] |= KS_CFI_IP_EXACT;
			__sync_fetch_and_add(&stats.cfi_signal_frames, 1);
			goto caller;
		case KS_CFI_END:
			w->why = CW_END;
			return 1;
		case KS_CFI_NONE:
			w->why = CW_NO_ROW;
			return 1;
		default:
			w->why = CW_UNSUP;
			return 1;
		}
		if (row->kind != KS_CFI_PLT && row->rbp_off &&
		    bpf_probe_read_user(&bp, sizeof(bp), (void *)(cfa + (__s64)row->rbp_off * 8)))
			goto fault;
	}
	if (bpf_probe_read_user(&ra, sizeof(ra), (void *)(cfa - 8)))
		goto fault;
caller:
	if (!ra) {
		w->why = CW_END;
		return 1;
	}
	w->pc = ra;
	w->sp = cfa;
	w->bp = bp;
	w->exact = exact;
	/* an exact pc is marked so user space names that pc, not the byte before */
	if (exact)
		ra |= KS_CFI_IP_EXACT;
	w->hash = (w->hash ^ ra) * 0x100000001b3ull;
	n = w->n;
	if (n >= KS_PROF_DEPTH) {
		w->why = CW_DEPTH;
		return 1;
	}
	w->st->ips[n] = ra;
	w->n = n + 1;
	return 0;
fault:
	w->why = CW_FAULT;
	return 1;
}

/*
 * Stores the walked stack (@w->st, @w->n frames) in half @gen of
 * cfi_stacks; its id, or -ENOSPC/-EEXIST lost.  Two candidate ids (the
 * hash's low and high halves): a stack whose first is taken by another
 * takes the second.
 */
static __always_inline __s32 cfi_store(struct cfi_walk *w, __u32 gen)
{
	struct ks_cfi_stack *old;
	__u32 id, key;
	long e;

	for (int tries = 0; tries < 2; tries++) {
		id = cfi_base + ((__u32)(tries ? w->hash >> 32 : w->hash) & cfi_mask);
		key = id | (gen ? KS_CFI_GEN_BIT : 0);
		old = bpf_map_lookup_elem(&cfi_stacks, &key);
		if (old) {
			/* the frames' 64-bit hash and depth stand for the frames: comparing 127 of them here cost the
			 * verifier more than half of the program's load time */
			if (old->hash == w->hash && old->n == w->n)
				return id;
			continue; /* another stack holds the id */
		}
		e = bpf_map_update_elem(&cfi_stacks, &key, w->st, BPF_NOEXIST);
		if (!e)
			return id;
		if (e != -17)
			return -28; /* full */
		/* another CPU stored a stack at this id meanwhile: the next id (the same stack stored
		 * twice is harmless: user space merges rows by the stacks' frames) */
	}
	return -17;
}

/*
 * A walk met a pc in no mapping of @p: a library loaded since its maps were
 * read (dlopen), or code no file backs (JIT).  User space reads them again
 * when asked, at most once a second a process.
 */
static __always_inline void ask_maps_again(__u32 pid, struct ks_cfi_proc *p)
{
	__u32 now = bpf_ktime_get_ns() >> 20;

	if (now - p->asked < 1000)
		return;
	p->asked = now; /* two CPUs may both ask: read twice, harmlessly */
	if (send_note(pid, KS_NOTE_CFI_MAPS))
		__sync_fetch_and_add(&stats.cfi_reread, 1);
}

/* The current task's user stack walked by CFI into half @gen; its id, or a negative errno (-EFAULT: none). */
static __always_inline __s32 cfi_stack(__u32 pid, __u32 gen)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct cfi_walk w = {};
	__u32 cpu = bpf_get_smp_processor_id();
	struct pt_regs *r;
	__s32 id;

	if (!pid || (t->flags & 0x00200000 /* PF_KTHREAD */))
		return -14;
	note_pid(pid);
	w.st = bpf_map_lookup_elem(&cfi_scratch, &cpu);
	if (!w.st)
		return -14;
	w.proc = bpf_map_lookup_elem(&cfi_procs, &pid);
	r = (struct pt_regs *)bpf_task_pt_regs(t);
	w.pc = BPF_CORE_READ(r, ip);
	w.sp = BPF_CORE_READ(r, sp);
	w.bp = BPF_CORE_READ(r, bp);
	if (!w.pc)
		return -14;
	__builtin_memset(w.st, 0, sizeof(*w.st));
	w.st->ips[0] = w.pc;
	w.n = 1;
	w.exact = true;
	w.hash = (0xcbf29ce484222325ull ^ w.pc) * 0x100000001b3ull;
	__sync_fetch_and_add(&stats.cfi_samples, 1);
	if (!w.proc) {
		/*
		 * Its tables are not in yet (a process's first samples), or the LRU
		 * evicted them: frame pointers meanwhile, and it is announced again
		 * at its next sample (user space stores an empty entry for a
		 * process whose maps it cannot read, so this ends).
		 */
		__sync_fetch_and_add(&stats.cfi_no_proc, 1);
		bpf_map_delete_elem(&seen, &pid);
		return -2;
	}
	bpf_loop(KS_PROF_DEPTH, cfi_step, &w, 0);
	if (w.unmapped)
		ask_maps_again(pid, w.proc);
	switch (w.why) {
	case CW_END: __sync_fetch_and_add(&stats.cfi_end, 1); break;
	case CW_NO_MAP: __sync_fetch_and_add(&stats.cfi_no_map, 1); break;
	case CW_NO_ROW: __sync_fetch_and_add(&stats.cfi_no_row, 1); break;
	case CW_UNSUP: __sync_fetch_and_add(&stats.cfi_unsup, 1); break;
	case CW_FAULT: __sync_fetch_and_add(&stats.cfi_fault, 1); break;
	case CW_DEPTH: __sync_fetch_and_add(&stats.cfi_depth, 1); break;
	case CW_GO: __sync_fetch_and_add(&stats.cfi_depth, 1); break;
	}
	__sync_fetch_and_add(&stats.cfi_frames, w.n);
	w.st->hash = w.hash;
	w.st->n = w.n;
	id = cfi_store(&w, gen);
	if (id < 0)
		__sync_fetch_and_add(&stats.ustack_lost, 1);
	return id;
}

SEC("perf_event")
int on_sample(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct ks_prof_key k = {};

	if (!ks_filter_pass(pid_tgid))
		return 0;
	__sync_fetch_and_add(&stats.samples, 1);
	k.pid = pid_tgid >> 32;
	k.tid = want_tid ? (__u32)pid_tgid : 0;
	/* read once: the stacks and their count go to one half */
	k.gen = k.sgen = ks_gen & 1;
	/* dwarf: the user stack is copied, not walked */
	take_stacks(ctx, k.gen, k.pid, &k.kstack, &k.ustack, mode != KS_PROF_DWARF);
	if (mode == KS_PROF_DWARF)
		return dwarf_sample(ctx, pid_tgid, k.kstack, k.gen);
	bpf_get_current_comm(k.comm, sizeof(k.comm));
	/* wall --stacks: the state is the mode the sample interrupted (x86: cs's privilege level) */
	if (wall_states) {
		/* the context is read whole words only: cs is a u16 with its padding (v6.7+) */
		__u64 cs = *(volatile __u64 *)((void *)&ctx->regs + __builtin_offsetof(struct pt_regs, cs));

		k.sc = ((cs & 3) ? KS_WALL_STACK_USER : KS_WALL_ONCPU) + 1;
	}
	count_add(&k, 1);
	return 0;
}

/* PF_KTHREAD (include/linux/sched.h): a kernel thread has no system call to tell */
#define PF_KTHREAD 0x00200000

/*
 * wall --stacks: the state @prev (current) leaves its CPU in.  The system
 * call it sleeps in is read from its saved registers (x86_64: orig_ax the
 * number, -1 outside one; si futex's op), where bpf/wall.bpf.c remembers
 * it at sys_enter: the same classes without two more programs per call.
 */
static __always_inline __u32 wall_state_out(struct task_struct *prev, bool preempt, unsigned int state)
{
	__u16 sys = KS_WALL_SYS_NONE;

	if (!preempt && state && !(BPF_CORE_READ(prev, flags) & PF_KTHREAD)) {
		struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(prev);
		long nr = BPF_CORE_READ(regs, orig_ax);

		sys = sys_class(nr, nr == NR_FUTEX ? BPF_CORE_READ(regs, si) : 0);
	}
	return state_out(prev, preempt, state, sys);
}

/* offcpu and syscalls --stacks: the interval each thread is in, by tid. */
/* LRU: a thread that exits while off the CPU never comes back to remove its entry */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ks_prof_start);
} off_starts SEC(".maps");

/*
 * Ends the interval @tid opened (off the CPU, or in a syscall): its time
 * to @now is added to the stacks taken when it began, in the current half
 * of the counts, naming the half of the stack maps those are in.  Counted
 * before the interval is deleted: a drain that no longer finds the interval
 * (whose stacks it would keep) finds its count instead (and keeps them).
 */
static __always_inline void end_interval(__u32 tid, __u64 now)
{
	struct ks_prof_start *st = bpf_map_lookup_elem(&off_starts, &tid);
	struct ks_prof_key k = {};
	long del;

	if (!st)
		return;
	k.pid = st->pid;
	k.tid = want_tid ? tid : 0;
	k.kstack = st->kstack;
	k.ustack = st->ustack;
	k.sc = st->sc;
	k.gen = ks_gen & 1;
	k.sgen = st->sgen;
	__builtin_memcpy(k.comm, st->comm, sizeof(k.comm));
	now = now > st->ts ? now - st->ts : 0;
	count_add(&k, now);
	/* -ENOENT: the LRU evicted it meanwhile (its count is in); any other failure leaves a stale interval */
	del = bpf_map_delete_elem(&off_starts, &tid);
	if (del && del != -2)
		__sync_fetch_and_add(&stats.map_errors, 1);
}

/*
 * At a blocking switch out, prev is current: its stacks are taken here
 * (kernel; user by frame pointers) and its off-CPU time added to them
 * when it is switched back in.  A preempted task is runnable, not blocked.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns();
	__u32 tid = (__u32)pid_tgid, ntid = next->pid;
	struct ks_prof_start s = {};
	unsigned int state = 0;

	if (bpf_core_field_exists(prev->__state))
		state = prev->__state;
	/* prev still has an interval open: its switch in went unseen (see ks_sched_unseen_in) */
	if (tid) {
		struct ks_prof_start *st = bpf_map_lookup_elem(&off_starts, &tid);
		__u64 end;

		if (st) {
			end = ks_task_switched_in(prev, st->ts, now, true);
			if (end) {
				__sync_fetch_and_add(&stats.off_inferred_in, 1);
				end_interval(tid, end);
			} else {
				__sync_fetch_and_add(&stats.off_unseen_in, 1);
				bpf_map_delete_elem(&off_starts, &tid);
			}
		}
	}
	/* wall: a preempted thread's wait for a CPU is a state too */
	if (tid && (wall_states || (!preempt && state)) && !(state & 0x80 /* TASK_DEAD */) && ks_filter_pass(pid_tgid)) {
		__sync_fetch_and_add(&stats.samples, 1);
		s.ts = now;
		s.pid = pid_tgid >> 32;
		s.sgen = ks_gen & 1;
		if (wall_states)
			s.sc = wall_state_out(prev, preempt, state) + 1;
		take_stacks(ctx, s.sgen, s.pid, &s.kstack, &s.ustack, true);
		bpf_get_current_comm(s.comm, sizeof(s.comm));
		if (bpf_map_update_elem(&off_starts, &tid, &s, BPF_ANY))
			__sync_fetch_and_add(&stats.counts_full, 1);
	}
	end_interval(ntid, now);
	return 0;
}

/*
 * wall --stacks: a blocked thread woken becomes runnable; its blocked
 * interval ends here and its wait for a CPU begins, under the same stacks
 * (taken when it left the CPU).  A wakeup of one already runnable changes
 * nothing.
 */
SEC("tp_btf/sched_wakeup")
int BPF_PROG(on_wall_wakeup, struct task_struct *p)
{
	__u32 tid = p->pid;
	struct ks_prof_start *st = bpf_map_lookup_elem(&off_starts, &tid), s;

	if (!st || st->sc == KS_WALL_RUNNABLE + 1 || st->sc == KS_WALL_THROTTLED + 1)
		return 0;
	s = *st;
	s.ts = bpf_ktime_get_ns();
	end_interval(tid, s.ts);
	s.sc = KS_WALL_RUNNABLE + 1;
	if (bpf_map_update_elem(&off_starts, &tid, &s, BPF_ANY))
		__sync_fetch_and_add(&stats.counts_full, 1);
	return 0;
}

/*
 * wall --stacks: a new thread waits for its first run; no stack of its own
 * yet (current is its parent): its wait counts under its name alone.  The
 * filter is asked with its ids (its cgroup and name are its parent's).
 */
SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(on_wall_wakeup_new, struct task_struct *p)
{
	__u32 tid = p->pid;
	struct ks_prof_start s = {};

	if (!tid || !ks_filter_pass(((__u64)p->tgid << 32) | tid))
		return 0;
	s.ts = bpf_ktime_get_ns();
	s.pid = p->tgid;
	s.kstack = s.ustack = -14; /* -EFAULT: none, as take_stacks says it */
	s.sgen = ks_gen & 1;
	s.sc = KS_WALL_RUNNABLE + 1;
	bpf_probe_read_kernel_str(s.comm, sizeof(s.comm), p->comm);
	if (bpf_map_update_elem(&off_starts, &tid, &s, BPF_ANY))
		__sync_fetch_and_add(&stats.counts_full, 1);
	return 0;
}

/* syscalls --stacks: time in a syscall (sc_nr, or every one when < 0) by the caller's stacks, taken at entry. */
const volatile __s32 sc_nr = -1;

SEC("tp_btf/sys_enter")
int BPF_PROG(on_sys_enter, struct pt_regs *regs, long id)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid;
	struct ks_prof_start s = {};

	if ((sc_nr >= 0 && id != sc_nr) || id < 0 || !ks_filter_pass(pid_tgid))
		return 0;
	__sync_fetch_and_add(&stats.samples, 1);
	s.pid = pid_tgid >> 32;
	s.sc = (__u16)id + 1; /* the syscall, for its frame */
	s.sgen = ks_gen & 1;
	take_stacks(ctx, s.sgen, s.pid, &s.kstack, &s.ustack, true);
	bpf_get_current_comm(s.comm, sizeof(s.comm));
	s.ts = bpf_ktime_get_ns();
	if (bpf_map_update_elem(&off_starts, &tid, &s, BPF_ANY))
		__sync_fetch_and_add(&stats.counts_full, 1);
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(on_sys_exit, struct pt_regs *regs, long ret)
{
	end_interval((__u32)bpf_get_current_pid_tgid(), bpf_ktime_get_ns());
	return 0;
}

/* biolat --stacks: bytes submitted, by the submitter's stacks (kernel and user) as the bio enters the block layer. */
SEC("tp_btf/block_bio_queue")
int BPF_PROG(on_bio, struct bio *bio)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct ks_prof_key k = {};
	__u32 size = BPF_CORE_READ(bio, bi_iter.bi_size);

	/* a flush carries no data: nothing to charge */
	if (!size || !ks_filter_pass(pid_tgid))
		return 0;
	__sync_fetch_and_add(&stats.samples, 1);
	k.pid = pid_tgid >> 32;
	k.tid = want_tid ? (__u32)pid_tgid : 0;
	k.gen = k.sgen = ks_gen & 1;
	take_stacks(ctx, k.gen, k.pid, &k.kstack, &k.ustack, true);
	bpf_get_current_comm(k.comm, sizeof(k.comm));
	count_add(&k, size);
	return 0;
}
