/* Kernel side of `ksight syscalls`: per-syscall counts, errno breakdown and sys_enter->sys_exit latency. */
#include "common.bpf.h"
#include "ksight/syscalls.h"

/* Configuration, fixed before load so the verifier prunes unused modes. */
const volatile __u32 by_mode = KS_SC_BY_SYSCALL;
const volatile bool errors_only = false;
const volatile __u32 start_mask = 0; /* start map size - 1 (a power of two) */

/* Buffer half the programs write to; user space flips it to drain the other. */
volatile __u32 ks_gen = 0;
struct ks_sc_lost lost = {};
/*
 * Rows of the array modes that have ever been written, so that user space
 * reads those only and not all 2 x 512 (each of them 7.8 KB per CPU) at
 * every interval.  In .bss: user space reads it through the skeleton's
 * mapping, without a syscall.  Set once: later events only read it.
 */
__u8 row_used[KS_SC_ROWS] = {};

/* Zeroed source for new hash rows (too big for the BPF stack). */
static const struct ks_sc_stat zero_stat = {};

/* In-flight syscall start per thread: an array indexed by tid, so both
 * lookups are inlined by the verifier instead of costing a hash walk. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* sized by the loader */
	__type(key, __u32);
	__type(value, struct ks_sc_start);
} starts SEC(".maps");

/* Rows of the syscall and errno modes: [gen][row]. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2 * KS_SC_ROWS);
	__type(key, __u32);
	__type(value, struct ks_sc_stat);
} rows SEC(".maps");

/* errno breakdown of the syscall mode: [gen][nr] -> counts by errno slot. */
struct errs_val {
	__u64 n[KS_SC_ERRS];
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2 * KS_SC_ROWS);
	__type(key, __u32);
	__type(value, struct errs_val);
} errs SEC(".maps");

/* Rows and errno breakdown of the pid and comm modes. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1); /* sized by the loader */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct ks_sc_key);
	__type(value, struct ks_sc_stat);
} hrows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1); /* sized by the loader */
	__type(key, struct ks_sc_err_key);
	__type(value, __u64);
} herrs SEC(".maps");

/* Command name of each process seen in pid mode, written once per new row. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* sized by the loader */
	__type(key, __u32);
	__type(value, char[KS_COMM_LEN]);
} pid_comm SEC(".maps");

static __always_inline struct ks_sc_stat *hash_row(struct ks_sc_key *k)
{
	bool created = false;
	struct ks_sc_stat *s = ks_map_lookup_or_init(&hrows, k, &zero_stat, &created);

	if (created && by_mode == KS_SC_BY_PID) {
		char comm[KS_COMM_LEN];

		bpf_get_current_comm(comm, sizeof(comm));
		bpf_map_update_elem(&pid_comm, &k->tgid, comm, BPF_ANY);
	}
	if (!s)
		__sync_fetch_and_add(&lost.map_full, 1);
	return s;
}

static __always_inline void count_errno(__u32 gen, __u32 nr, struct ks_sc_key *k, __u64 err)
{
	if (by_mode == KS_SC_BY_SYSCALL) {
		__u32 idx = gen * KS_SC_ROWS + nr;
		struct errs_val *e = bpf_map_lookup_elem(&errs, &idx);
		__u32 slot = ks_sc_err_slot(err);

		/* clang proves slot < KS_SC_ERRS and drops the check, leaving the
		 * verifier to derive it from err - 512 <= 54; verifiers before 6.11
		 * (98d7ca374ba4 "bpf: Track delta between linked registers") cannot,
		 * and 6.1 rejects the store as unbounded: hide slot from clang. */
		barrier_var(slot);
		if (e && slot < KS_SC_ERRS)
			e->n[slot]++;
	} else if (by_mode == KS_SC_BY_PID || by_mode == KS_SC_BY_COMM) {
		struct ks_sc_err_key ek = { .k = *k, .err = (__u32)err };
		__u64 *c = bpf_map_lookup_elem(&herrs, &ek);

		if (c) {
			(*c)++;
		} else {
			__u64 one = 1;

			if (bpf_map_update_elem(&herrs, &ek, &one, BPF_NOEXIST))
				__sync_fetch_and_add(&lost.map_full, 1);
		}
	}
}

/* Account one finished syscall; @delta is only meaningful when @timed. */
static __always_inline void account(__u64 pid_tgid, __u32 nr, long ret, __u64 delta, bool timed)
{
	__u32 gen = ks_gen & 1;
	struct ks_sc_key k = {};
	struct ks_sc_stat *s;
	__u64 err = ret < 0 ? (__u64)-ret : 0;

	if (nr >= KS_SC_ROWS)
		nr = KS_SC_ROWS - 1;
	if (by_mode == KS_SC_BY_SYSCALL || by_mode == KS_SC_BY_ERRNO) {
		__u32 idx = gen * KS_SC_ROWS;

		__u32 row = nr;

		if (by_mode == KS_SC_BY_ERRNO)
			row = err < KS_SC_ROWS ? (__u32)err : KS_SC_ROWS - 1;
		barrier_var(row); /* one bounded register for the index, as in count_errno */
		if (row < KS_SC_ROWS && !row_used[row])
			row_used[row] = 1;
		idx += row;
		s = bpf_map_lookup_elem(&rows, &idx);
	} else {
		k.gen = gen;
		if (by_mode == KS_SC_BY_PID)
			k.tgid = pid_tgid >> 32;
		else
			bpf_get_current_comm(k.comm, sizeof(k.comm));
		s = hash_row(&k);
	}
	if (!s)
		return;
	s->count++;
	if (timed) {
		__u32 slot = ks_hist_slot(delta);

		s->sum_ns += delta;
		if (delta > s->max_ns)
			s->max_ns = delta;
		if (slot < KS_HIST_SLOTS)
			s->hist[slot]++;
	}
	if (err) {
		s->errors++;
		count_errno(gen, nr, &k, err);
	}
}

static __always_inline int on_enter(long id)
{
	__u64 pid_tgid;
	__u32 tid, idx;
	struct ks_sc_start *st;

	/* exit and exit_group never return: a start left behind would be
	 * matched against a later thread that reuses the tid. */
	if (id == 60 || id == 231)
		return 0;
	pid_tgid = bpf_get_current_pid_tgid();
	if (!ks_filter_pass(pid_tgid))
		return 0;
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

/* Latency mode: the start entry carries the syscall number and proves the
 * thread passed the filter at entry. */
static __always_inline int on_exit_timed(long ret)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid, idx = tid & start_mask;
	struct ks_sc_start *st = bpf_map_lookup_elem(&starts, &idx);
	__u64 ts;

	if (!st || !st->ts || st->tid != tid)
		return 0;
	ts = st->ts;
	st->ts = 0;
	if (errors_only && ret >= 0)
		return 0;
	account(pid_tgid, st->nr, ret, bpf_ktime_get_ns() - ts, true);
	return 0;
}

/* Count-only mode: one program on sys_exit, nothing kept per thread. */
static __always_inline int on_exit_count(long nr, long ret)
{
	__u64 pid_tgid = 0;

	if (errors_only && ret >= 0)
		return 0;
	if (ks_filter.flags || by_mode == KS_SC_BY_PID) {
		pid_tgid = bpf_get_current_pid_tgid();
		if (!ks_filter_pass(pid_tgid))
			return 0;
	}
	if (nr < 0)
		return 0;
	account(pid_tgid, (__u32)nr, ret, 0, false);
	return 0;
}

const volatile bool timed = true;

SEC("tp_btf/sys_enter")
int BPF_PROG(sys_enter__tp_btf, struct pt_regs *regs, long id)
{
	return on_enter(id);
}

SEC("tp_btf/sys_exit")
int BPF_PROG(sys_exit__tp_btf, struct pt_regs *regs, long ret)
{
	if (timed)
		return on_exit_timed(ret);
	/* a trusted pointer here: a plain load, no helper call */
	return on_exit_count(regs->orig_ax, ret);
}

SEC("raw_tp/sys_enter")
int BPF_PROG(sys_enter__raw_tp, struct pt_regs *regs, long id)
{
	return on_enter(id);
}

SEC("raw_tp/sys_exit")
int BPF_PROG(sys_exit__raw_tp, struct pt_regs *regs, long ret)
{
	if (timed)
		return on_exit_timed(ret);
	return on_exit_count(BPF_CORE_READ(regs, orig_ax), ret);
}

SEC("tracepoint/raw_syscalls/sys_enter")
int sys_enter__tp(struct trace_event_raw_sys_enter *ctx)
{
	return on_enter(ctx->id);
}

SEC("tracepoint/raw_syscalls/sys_exit")
int sys_exit__tp(struct trace_event_raw_sys_exit *ctx)
{
	if (timed)
		return on_exit_timed(ctx->ret);
	return on_exit_count(ctx->id, ctx->ret);
}
