/* Small helpers around libbpf used by several collectors: grace periods, per-CPU sums, map sizing. */
#ifndef KS_CORE_BPFUTIL_H
#define KS_CORE_BPFUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Waits until every BPF program that may have read the old buffer index
 * has finished: non-sleepable programs run inside an RCU read section, so
 * a full grace period (membarrier's global command) is enough.
 */
void ks_sync_programs(void);
/*
 * Flips the double-buffer index: *@gen toggles, the BPF program's .bss copy
 * @bss_gen follows, and programs still writing the old half are waited
 * out.  Returns the old half, now quiet and safe to drain.
 */
unsigned int ks_gen_flip(unsigned int *gen, volatile uint32_t *bss_gen);
/*
 * The same without the wait, for a collector's mark() hook: the driver
 * waits once (ks_sync_programs) for every instance it marked before any
 * drain() reads the returned half.
 */
unsigned int ks_gen_mark(unsigned int *gen, volatile uint32_t *bss_gen);
/* Number of possible CPUs, as per-CPU map values are laid out; >= 1. */
int ks_ncpus(void);
/* Smallest power of two >= @v, at least 1 and at most @cap. */
uint32_t ks_pow2_at_least(uint64_t v, uint32_t cap);
/* /proc/sys/kernel/pid_max, or 4194304 when unreadable. */
uint64_t ks_pid_max(void);

/*
 * What a drain does with the kernel's copy of the data it reads.  One
 * pass that reads and empties (TAKE) is the default; serve --pin splits
 * it (core/instance.h, ks_instances_collect): READ, then the totals holding
 * what was read are saved, then CLEAR, so that a kill -9 between the two
 * never loses what was drained.
 */
enum ks_drain_mode {
	KS_DRAIN_TAKE,	/* read and empty */
	KS_DRAIN_READ,	/* read; the kernel's copy stays */
	KS_DRAIN_CLEAR, /* empty, reading nothing (callbacks are not called) */
};

/*
 * One drain of a hash map's rows (of one buffer half, by @match).  Rows
 * are deleted, or, when @keep says so for a row, zeroed in place: rows the
 * programs should find made when they write this half again (an "other"
 * row, rows of busy keys).  The map must not be written by the programs
 * meanwhile (the quiet half of a flip), so emptying a row after reading it
 * loses nothing, and emptying twice is harmless.
 */
struct ks_hash_half {
	int fd;
	size_t key_size;
	bool (*match)(const void *key, void *arg); /* the rows to drain (NULL: all) */
	int (*cb)(const void *key, const void *value, void *arg); /* each row read: 0 or -errno */
	bool (*keep)(const void *key, const void *value, void *arg); /* NULL: every row is deleted */
	const void *zero; /* a kept row's new value (as large as @value_buf's contents) */
	void *arg;
	void *value_buf; /* a per-CPU value's size for a per-CPU map */
};
/*
 * Reads the map in batches where the kernel has batch operations on
 * hashes (5.6+, decided once per process), else a key at a time (keys
 * gathered first: deleting while walking restarts get_next_key).  @h->zero
 * and @h->value_buf are read as large as the map's value (all CPUs' for a
 * per-CPU map).  0 or the first negative errno.
 */
int ks_hash_drain_half(const struct ks_hash_half *h, enum ks_drain_mode mode);
/* Test and bench only: batch operations on (@on) or off, in place of the first drain's decision. */
void ks_hash_drain_batch(bool on);
/*
 * Deletes the @n keys at @keys (@key_size bytes each) from the map @fd,
 * in one batch where the kernel has batch operations (5.6+), else one at
 * a time; keys not in the map are passed over.
 */
void ks_map_delete_keys(int fd, const void *keys, uint32_t n, size_t key_size);
/*
 * Drains a hash map: every key for which @match returns true (all keys
 * when @match is NULL) is looked up into @value_buf (sized for a per-CPU
 * value when the map is per-CPU), deleted, then handed to @cb.
 * Returns 0 or the first negative errno (from @cb or the map).
 */
int ks_hash_drain(int fd, size_t key_size, bool (*match)(const void *key, void *arg),
		  int (*cb)(const void *key, const void *value, void *arg), void *arg, void *value_buf);

/*
 * Creates @key with @value in the map @fd unless the key is there.  A hash
 * map without preallocation takes elements from per-CPU caches that the
 * kernel refills asynchronously, and keeps as little as one element for
 * large values: ENOMEM is retried for a few milliseconds.  0 or -errno.
 */
int ks_map_add(int fd, const void *key, const void *value);

/*
 * Command name of process @tgid into @comm (16 bytes): taken from the BPF
 * hash map @fd (u32 tgid -> char[16]) and deleted there, else read from
 * /proc when the map had no room, else "?".
 */
void ks_pid_comm_take(int fd, uint32_t tgid, char *comm);
/* The same without deleting: for an LRU map that outlives the rows it names. */
void ks_pid_comm_peek(int fd, uint32_t tgid, char *comm);
/* Puts the command name of live process @tgid, from /proc, into the map @fd. */
void ks_pid_comm_seed(int fd, uint32_t tgid);

/*
 * Drains elements [@first, @first + @n) of a (per-CPU) array map: each is
 * looked up into @value_buf (@value_size bytes for all CPUs) and handed to
 * @cb, which returns 1 when it took data (the element is then zeroed), 0
 * when the element was empty, or a negative errno that stops the drain.
 */
int ks_array_drain(int fd, uint32_t first, uint32_t n, void *value_buf, size_t value_size,
		   int (*cb)(uint32_t idx, const void *value, void *arg), void *arg);
/* The same in @mode: READ hands every element to @cb and zeroes none; CLEAR zeroes every non-zero one. */
int ks_array_drain_mode(int fd, uint32_t first, uint32_t n, void *value_buf, size_t value_size,
			int (*cb)(uint32_t idx, const void *value, void *arg), void *arg, enum ks_drain_mode mode);

/*
 * A collector's --pin cursor (core/pin.h, cursor_get/cursor_set) of
 * @n u64 counters: cumulative in the kernel (.bss), reported as the
 * difference from their last read, which these keep with the saved
 * totals.  get: a malloc'd copy of *@fields[i] into *@buf; set: the
 * saved values back, -EBADMSG when not @n of them.
 */
int ks_cursor_get_u64(uint64_t *const *fields, int n, void **buf, size_t *len);
int ks_cursor_set_u64(uint64_t *const *fields, int n, const void *buf, size_t len);

struct btf;
/* The kernel's BTF, loaded once and kept for the process: NULL with errno set when it has none. */
struct btf *ks_kernel_btf(void);
/*
 * Makes the kernel's names of drop reasons (enum skb_drop_reason, from its
 * BTF) ready for ks_drop_reason_name: false when the kernel has no BTF
 * (the names are then numbers).
 */
bool ks_drop_reasons_load(void);
/* Drop reason @code's name without its SKB_DROP_REASON_ prefix into @buf (the number when unknown); @buf. */
const char *ks_drop_reason_name(uint32_t code, char *buf, size_t len);

/*
 * Number of arguments of tracepoint @tp as tp_btf and raw_tp programs see
 * them, from the kernel's BTF (typedef btf_trace_<tp>); negative errno when
 * the kernel has no BTF or no such tracepoint.
 */
int ks_tp_nargs(const char *tp);
/*
 * 1 when argument @idx (0-based, after the hook's data) of tracepoint @tp
 * is a pointer, 0 when it is not: how a collector tells a task argument
 * from the pid an older kernel passed.  Negative errno as ks_tp_nargs.
 */
int ks_tp_arg_is_ptr(const char *tp, int idx);
/*
 * 1 when struct @type of the kernel's BTF has a member named @member
 * (top level only), 0 when it has not; negative errno when the kernel has
 * no BTF or no such struct.  What a classic tracepoint's record holds is
 * its trace_event_raw_<class> struct.
 */
int ks_btf_has_member(const char *type, const char *member);

/*
 * BPF_TRACE_UPROBE_MULTI (Linux 6.6): one link puts @prog_fd on @cnt
 * offsets of the file @path (entries, or returns with @ret), each call's
 * bpf_get_attach_cookie() being its @cookies entry; @pid > 0 limits it to
 * that process.  The program must have been loaded with that expected
 * attach type (ks_uprobe_multi_prepare).  One link is one unregistration
 * and one grace period at close, where a perf-event uprobe per offset
 * waits a grace period each (793 functions took minutes to detach).
 * libbpf 1.1 has no call for it: the link is made with the bpf syscall.
 * Returns the link's fd, or negative errno.
 */
int ks_uprobe_multi_link(int prog_fd, const char *path, const uint64_t *offsets, const uint64_t *cookies,
			 uint32_t cnt, bool ret, int pid);
struct bpf_program;
/* Sets @p's expected attach type to uprobe_multi (before load): its section name says plain uprobe. */
int ks_uprobe_multi_prepare(struct bpf_program *p);

#endif
