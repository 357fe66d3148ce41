/* Kernel side of `ksight syscalls`: per-syscall counts, errno breakdown and sys_enter->sys_exit latency. */
#include "common.bpf.h"
#include "ksight/syscalls.h"

/* Configuration, fixed before load so the verifier prunes unused modes. */
const volatile __u32 by_mode = KS_SC_BY_SYSCALL;
const volatile bool errors_only = false;
const volatile bool timed = true;
const volatile __u32 start_mask = 0; /* start map size - 1 (a power of two) */
const volatile __u32 nhists = 0;     /* histograms the hists map holds */

/* Buffer half the programs write to; user space flips it to drain the other. */
volatile __u32 ks_gen = 0;
struct ks_sc_lost lost = {};
/*
 * Rows of the array modes that have ever been written, so that user space
 * reads those only.  In .bss: user space reads it through the skeleton's
 * mapping, without a syscall.  Set once: later events only read it.
 */
__u8 row_used[KS_SC_ROWS] = {};
/*
 * Histogram of each row of the array modes: 0 while none is assigned, then
 * its index in hists + 1, or KS_SC_NOHIST when the budget's histograms were
 * all taken (the row keeps exact counts, sum and max, without a histogram).
 * Assigned on first use, so only syscalls actually seen take one.
 */
__u32 hist_of[KS_SC_ROWS] = {};
__u32 hist_next = 0;

/* Zeroed source for new shared rows (too big for the BPF stack). */
static const struct ks_sc_srow zero_row = {};
static const __u64 zero_u64 = 0;

/* In-flight syscall start per thread: an array indexed by tid, so both
 * lookups are inlined by the verifier instead of costing a hash walk.
 * Sized by the loader from pid_max and the budget; tids that alias are
 * counted in start_collisions. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* sized by the loader */
	__type(key, __u32);
	__type(value, struct ks_sc_start);
} starts SEC(".maps");

/*
 * Counters of the syscall and errno modes, [gen][row]: per-CPU because a
 * syscall rate is per-CPU-bound (millions a second), but only 32 bytes a
 * row, so all 2 x 512 rows cost 4 MiB at 128 CPUs.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2 * KS_SC_ROWS);
	__type(key, __u32);
	__type(value, struct ks_sc_cnt);
} rows SEC(".maps");

/*
 * Latency histograms of the syscall and errno modes, per CPU for the same
 * reason, cumulative (see struct ks_sc_hist), one per row actually seen
 * (hist_of): as many as the budget allows (~40 at 128 CPUs in 16 MiB).
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1); /* sized by the loader */
	__type(key, __u32);
	__type(value, struct ks_sc_hist);
} hists SEC(".maps");

/*
 * errno breakdown of the syscall mode: only the (syscall, errno) pairs that
 * occur, per CPU (EAGAIN can be as frequent as the calls).  Preallocated:
 * a map that allocates on insert fails bursts of new keys with ENOMEM from
 * its per-CPU element cache while it still has room.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1); /* sized by the loader */
	__type(key, struct ks_sc_nerr_key);
	__type(value, __u64);
} nerrs SEC(".maps");

/*
 * Rows of the pid, comm and combined modes: many keys, each busy on few CPUs, so one
 * shared copy updated with atomic adds (4.8 KB a row at any CPU count)
 * instead of a per-CPU one (~600 KB a row at 128 CPUs).  Preallocated, as
 * nerrs, so that a burst of new rows never fails while there is room.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* sized by the loader */
	__type(key, struct ks_sc_key);
	__type(value, struct ks_sc_srow);
} srows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* sized by the loader */
	__type(key, struct ks_sc_err_key);
	__type(value, __u64);
} herrs SEC(".maps");

/*
 * Command name of each process seen in pid mode, written with each new row
 * and at exec.  A hash, not KS_PID_COMM_MAP's LRU: user space deletes the
 * names of the rows it drained.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* sized by the loader */
	__type(key, __u32);
	__type(value, char[KS_COMM_LEN]);
} pid_comm SEC(".maps");
KS_PID_COMM_EXEC(pid_comm)

/*
 * The histogram index + 1 of array row @row, assigned on first use.  Two
 * CPUs meeting a new syscall at once both take an index; the compare and
 * exchange keeps one, the other index stays unused.
 */
static __always_inline __u32 hist_index(__u32 row)
{
	__u32 h, n, want, old;

	if (row >= KS_SC_ROWS)
		return KS_SC_NOHIST;
	h = hist_of[row];
	if (h)
		return h;
	n = __sync_fetch_and_add(&hist_next, 1);
	want = n < nhists ? n + 1 : KS_SC_NOHIST;
	old = __sync_val_compare_and_swap(&hist_of[row], 0, want);
	return old ? old : want;
}

static __always_inline void count_nerr(__u32 gen, __u32 nr, __u64 err)
{
	struct ks_sc_nerr_key ek = { .gen = gen, .nr = nr, .err = (__u32)err };
	enum ks_init_miss miss = 0;
	__u64 *c = ks_map_lookup_or_init(&nerrs, &ek, &zero_u64, NULL, &miss, &lost.update_failed);

	if (c)
		(*c)++;
	else if (miss == KS_INIT_FULL)
		__sync_fetch_and_add(&lost.errno_full, 1);
}

/* Array modes: per-CPU counters of row (syscall or errno), plain adds. */
static __always_inline void account_array(__u32 gen, __u32 nr, __u64 err, __u64 delta, bool is_timed)
{
	__u32 row = nr, idx;
	struct ks_sc_cnt *c;

	if (by_mode == KS_SC_BY_ERRNO)
		row = err < KS_SC_ROWS ? (__u32)err : KS_SC_ROWS - 1;
	/* one bounded register for the index: 6.1's verifier links no copies */
	barrier_var(row);
	if (row >= KS_SC_ROWS)
		return;
	if (!row_used[row])
		row_used[row] = 1;
	idx = gen * KS_SC_ROWS + row;
	c = bpf_map_lookup_elem(&rows, &idx);
	if (!c)
		return;
	c->count++;
	if (is_timed) {
		__u32 h = hist_index(row);

		c->sum_ns += delta;
		if (delta > c->max_ns)
			c->max_ns = delta;
		if (h != KS_SC_NOHIST) {
			__u32 hi = h - 1, slot = ks_hist_slot_max(delta, KS_SC_HSLOTS);
			struct ks_sc_hist *hs = bpf_map_lookup_elem(&hists, &hi);

			if (hs && slot < KS_SC_HSLOTS)
				hs->slot[slot]++;
		}
	}
	if (err) {
		c->errors++;
		if (by_mode == KS_SC_BY_SYSCALL)
			count_nerr(gen, nr, err);
	}
}

/* Modes whose key has the process id (whose rows are named by pid_comm). */
static __always_inline bool by_tgid(void)
{
	return by_mode == KS_SC_BY_PID || by_mode == KS_SC_BY_PID_SYSCALL;
}

/*
 * Pid, comm, cgroup and the combined modes: one shared row per key, atomic
 * adds.  A key the map has no room for (the budget's rows are taken) goes
 * to the "other" row of its half, which user space makes ahead.
 */
static __always_inline void account_shared(__u32 gen, __u64 pid_tgid, __u32 nr, __u64 err, __u64 delta,
					   bool is_timed)
{
	struct ks_sc_key k = { .t.gen = gen };
	enum ks_init_miss miss = 0;
	struct ks_sc_srow *s;
	bool created = false;

	if (by_tgid())
		k.t.id = pid_tgid >> 32;
	else if (by_mode == KS_SC_BY_COMM || by_mode == KS_SC_BY_COMM_SYSCALL)
		bpf_get_current_comm(k.t.comm, sizeof(k.t.comm));
	else
		k.t.cgroup = bpf_get_current_cgroup_id();
	if (by_mode >= KS_SC_BY_PID_SYSCALL)
		k.nr = nr;
	s = ks_map_lookup_or_init(&srows, &k, &zero_row, &created, &miss, &lost.update_failed);
	if (created && by_tgid()) {
		char comm[KS_COMM_LEN];

		bpf_get_current_comm(comm, sizeof(comm));
		/* a name cache: a refusal loses no count (see KS_PID_COMM_MAP) */
		bpf_map_update_elem(&pid_comm, &k.t.id, comm, BPF_ANY);
	}
	/* a refused insert is lost (counted): the "other" row is for keys with no room */
	if (!s && miss == KS_INIT_FAILED)
		return;
	if (!s) {
		__builtin_memset(&k, 0, sizeof(k));
		k.t.gen = gen;
		k.other = 1;
		s = bpf_map_lookup_elem(&srows, &k);
		if (!s) {
			__sync_fetch_and_add(&lost.map_full, 1);
			return;
		}
		__sync_fetch_and_add(&lost.to_other, 1);
	}
	__sync_fetch_and_add(&s->c.count, 1);
	if (is_timed) {
		__u32 slot = ks_hist_slot_max(delta, KS_SC_HSLOTS);

		__sync_fetch_and_add(&s->c.sum_ns, delta);
		/* an atomic max: a few tries, each lost only to a larger or concurrent value */
#pragma unroll
		for (int i = 0; i < 3; i++) {
			__u64 m = s->c.max_ns;

			if (delta <= m || __sync_val_compare_and_swap(&s->c.max_ns, m, delta) == m)
				break;
		}
		if (slot < KS_SC_HSLOTS)
			__sync_fetch_and_add(&s->slot[slot], 1);
	}
	if (err) {
		struct ks_sc_err_key ek = { .k = k, .err = (__u32)err };
		__u64 *c;

		__sync_fetch_and_add(&s->c.errors, 1);
		miss = 0;
		c = ks_map_lookup_or_init(&herrs, &ek, &zero_u64, NULL, &miss, &lost.update_failed);
		if (c)
			__sync_fetch_and_add(c, 1);
		else if (miss == KS_INIT_FULL)
			__sync_fetch_and_add(&lost.errno_full, 1);
	}
}

/* Account one call; @delta is only meaningful when @is_timed. */
static __always_inline void account(__u64 pid_tgid, __u32 nr, long ret, __u64 delta, bool is_timed)
{
	__u32 gen = ks_gen & 1;
	__u64 err = ks_sc_errno(ret);

	if (nr >= KS_SC_ROWS)
		nr = KS_SC_ROWS - 1;
	if (by_mode == KS_SC_BY_SYSCALL || by_mode == KS_SC_BY_ERRNO)
		account_array(gen, nr, err, delta, is_timed);
	else
		account_shared(gen, pid_tgid, nr, err, delta, is_timed);
}

static __always_inline bool never_returns(long nr)
{
	return nr == KS_SC_NR_EXIT || nr == KS_SC_NR_EXIT_GROUP;
}

static __always_inline int on_enter(long id)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid, idx;
	struct ks_sc_start *st;

	if (!ks_filter_pass(pid_tgid))
		return 0;
	/* exit and exit_group never return: counted here, without a latency
	 * (and no start is left for a later thread that reuses the tid) */
	if (never_returns(id)) {
		if (!errors_only)
			account(pid_tgid, (__u32)id, 0, 0, false);
		return 0;
	}
	tid = (__u32)pid_tgid;
	idx = tid & start_mask;
	st = bpf_map_lookup_elem(&starts, &idx);
	if (!st)
		return 0;
	if (st->ts && st->tid != tid)
		__sync_fetch_and_add(&lost.start_collisions, 1);
	st->tid = tid;
	st->nr = (__u32)id;
	st->ts = bpf_ktime_get_ns();
	return 0;
}

/*
 * One call seen at its return only, counted by the number the return
 * shows.  rt_sigreturn shows -1 there (it sets orig_ax to -1 so that the
 * restored context is not restarted as a syscall).  A child's return from
 * fork/clone is not a call of its own: the parent's return counts it.
 */
static __always_inline int count_at_exit(__u64 pid_tgid, long nr, long ret)
{
	if (nr == -1)
		nr = KS_SC_NR_RT_SIGRETURN;
	else if (nr < 0)
		return 0;
	if (ret == 0 && (nr == KS_SC_NR_CLONE || nr == KS_SC_NR_FORK || nr == KS_SC_NR_VFORK ||
			 nr == KS_SC_NR_CLONE3))
		return 0;
	if (errors_only && !ks_sc_errno(ret))
		return 0;
	/* ksight's own calls too (not_tgid): a return with no start must not bring them back */
	if (ks_filter.flags || ks_filter.not_tgid || by_tgid()) {
		if (!pid_tgid)
			pid_tgid = bpf_get_current_pid_tgid();
		if (!ks_filter_pass(pid_tgid))
			return 0;
	}
	account(pid_tgid, (__u32)nr, ret, 0, false);
	return 0;
}

/*
 * Latency mode: the start entry carries the syscall number and proves the
 * thread passed the filter at entry.  A return without a start of its own
 * (started before the attach, start slot taken by an aliasing tid, or an
 * execve by a non-leader thread, which returns under the leader's tid) is
 * still a call: counted by @exit_nr without a latency.
 */
static __always_inline int on_exit_timed(long exit_nr, long ret)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid, idx = tid & start_mask;
	struct ks_sc_start *st = bpf_map_lookup_elem(&starts, &idx);
	__u64 ts;

	if (!st)
		return 0;
	if (!st->ts || st->tid != tid)
		return count_at_exit(pid_tgid, exit_nr, ret);
	ts = st->ts;
	st->ts = 0;
	/* exit_nr -1: rt_sigreturn, whose start has its number */
	if (exit_nr >= 0 && exit_nr != st->nr)
		return count_at_exit(pid_tgid, exit_nr, ret);
	if (errors_only && !ks_sc_errno(ret))
		return 0;
	account(pid_tgid, st->nr, ret, bpf_ktime_get_ns() - ts, true);
	return 0;
}

KS_BTF_RAW_PROGS(sys_enter, sys_enter, on_enter(id), struct pt_regs *regs, long id)
/* under tp_btf a trusted pointer: a plain load, no helper call */
KS_BTF_RAW_PROGS(sys_exit, sys_exit, ({
			 long nr = KS_RD(trusted, regs, orig_ax);

			 timed ? on_exit_timed(nr, ret) : count_at_exit(0, nr, ret);
		 }),
		 struct pt_regs *regs, long ret)

SEC("tracepoint/raw_syscalls/sys_enter")
int sys_enter__tp(struct trace_event_raw_sys_enter *ctx)
{
	return on_enter(ctx->id);
}

SEC("tracepoint/raw_syscalls/sys_exit")
int sys_exit__tp(struct trace_event_raw_sys_exit *ctx)
{
	if (timed)
		return on_exit_timed(ctx->id, ctx->ret);
	return count_at_exit(0, ctx->id, ctx->ret);
}

/*
 * Count-only mode has no sys_enter program, and exit and exit_group never
 * reach sys_exit: a thread that ends inside one of them is counted when it
 * exits.  Its saved registers tell: orig_ax holds the call's number and ax
 * still the -ENOSYS the entry code puts there until a call returns (a
 * thread killed elsewhere has another number, or a return value, there).
 */
static __always_inline int on_task_exit(void)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	long nr = BPF_CORE_READ(regs, orig_ax), ax = BPF_CORE_READ(regs, ax);
	__u64 pid_tgid;

	if (!never_returns(nr) || ax != -38 /* -ENOSYS */ || errors_only)
		return 0;
	pid_tgid = bpf_get_current_pid_tgid();
	if (!ks_filter_pass(pid_tgid))
		return 0;
	account(pid_tgid, (__u32)nr, 0, 0, false);
	return 0;
}

KS_BTF_RAW_PROGS(task_exit, sched_process_exit, on_task_exit())

SEC("tracepoint/sched/sched_process_exit")
int task_exit__tp(void *ctx)
{
	return on_task_exit();
}
