/* Feature probing by loading and attaching for real, as the kernel may offer a program type it cannot attach. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "core/bpfutil.h"
#include "core/probe.h"
#include "core/tracefs.h"
#include "ksight/filter.h"
#include "probe.skel.h"

static const char *const names[KS_FEAT_COUNT] = {
	[KS_FEAT_BTF] = "btf",
	[KS_FEAT_FENTRY] = "fentry",
	[KS_FEAT_KPROBE] = "kprobe",
	[KS_FEAT_TP_BTF] = "tp_btf",
	[KS_FEAT_RAW_TP] = "raw_tp",
	[KS_FEAT_TP] = "tracepoint",
	[KS_FEAT_UPROBE] = "uprobe",
	[KS_FEAT_PERF_EVENT] = "perf_event",
	[KS_FEAT_RINGBUF] = "ringbuf",
	[KS_FEAT_TASK_STORAGE] = "task_storage",
	[KS_FEAT_DYN_HASH] = "dyn_hash",
	[KS_FEAT_UPROBE_MULTI] = "uprobe_multi",
};

const char *ks_feature_name(enum ks_feature f)
{
	return f < KS_FEAT_COUNT ? names[f] : "?";
}

/* A function of our own, for the uprobe probe to attach to. */
__attribute__((noinline, used)) int ks_probe_uprobe_target(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

static struct bpf_program *prog_of(struct ks_probe *s, enum ks_feature f)
{
	switch (f) {
	case KS_FEAT_FENTRY: return s->progs.probe__fentry;
	case KS_FEAT_KPROBE: return s->progs.probe__kprobe;
	case KS_FEAT_TP_BTF: return s->progs.probe__tp_btf;
	case KS_FEAT_RAW_TP: return s->progs.probe__raw_tp;
	case KS_FEAT_TP: return s->progs.probe__tp;
	case KS_FEAT_UPROBE: return s->progs.probe__uprobe;
	case KS_FEAT_PERF_EVENT: return s->progs.probe__perf_event;
	case KS_FEAT_UPROBE_MULTI: return s->progs.probe__uprobe_multi;
	default: return NULL;
	}
}

static int attach(struct bpf_program *p, enum ks_feature f, struct bpf_link **link, int *pfd)
{
	long err;

	switch (f) {
	case KS_FEAT_UPROBE_MULTI: {
		uint64_t off = 0, cookie = 0;

		/*
		 * No real uprobe: closing one waits for a grace period, which
		 * made up half of funclat's start-up (116 ms, 53 without the
		 * probe; bench/funclat.sh).  A kernel with uprobe_multi checks
		 * the attach type, then resolves the path and refuses a
		 * directory with EBADF; one without refuses the type (EINVAL).
		 */
		*pfd = ks_uprobe_multi_link(bpf_program__fd(p), "/", &off, &cookie, 1, false, 0);
		return *pfd >= 0 || *pfd == -EBADF ? 0 : *pfd;
	}
	case KS_FEAT_UPROBE: {
		LIBBPF_OPTS(bpf_uprobe_opts, o, .func_name = "ks_probe_uprobe_target");

		*link = bpf_program__attach_uprobe_opts(p, 0, "/proc/self/exe", 0, &o);
		break;
	}
	case KS_FEAT_PERF_EVENT: {
		struct perf_event_attr a = {
			.type = PERF_TYPE_SOFTWARE,
			.size = sizeof(a),
			.config = PERF_COUNT_SW_CPU_CLOCK,
			.sample_freq = 1,
			.freq = 1,
		};

		*pfd = (int)syscall(__NR_perf_event_open, &a, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
		if (*pfd < 0)
			return -errno;
		*link = bpf_program__attach_perf_event(p, *pfd);
		break;
	}
	default:
		*link = bpf_program__attach(p);
	}
	err = libbpf_get_error(*link);
	if (!*link)
		return err ? (int)err : -EINVAL;
	return 0;
}

static void probe_one(enum ks_feature f, struct ks_probe_result *r)
{
	struct ks_probe *s;
	struct bpf_program *p, *want = NULL;
	struct bpf_link *link = NULL;
	int err, pfd = -1;

	r->step = "open";
	s = ks_probe__open();
	if (!s) {
		r->err = -errno;
		return;
	}
	want = prog_of(s, f);
	bpf_object__for_each_program(p, s->obj)
		bpf_program__set_autoload(p, p == want);
	/* maps are only created for their own probe */
	if (f != KS_FEAT_RINGBUF)
		bpf_map__set_autocreate(s->maps.probe_ringbuf, false);
	if (f != KS_FEAT_TASK_STORAGE)
		bpf_map__set_autocreate(s->maps.probe_task_storage, false);
	if (f == KS_FEAT_UPROBE_MULTI)
		ks_uprobe_multi_prepare(want);
	r->step = "load";
	err = ks_probe__load(s);
	if (!err && want) {
		r->step = "attach";
		err = attach(want, f, &link, &pfd);
	}
	r->ok = !err;
	r->err = err;
	bpf_link__destroy(link);
	if (pfd >= 0)
		close(pfd);
	ks_probe__destroy(s);
}

/*
 * KS_FEAT_DYN_HASH: a perf_event program of five instructions that looks up
 * a key in a hash map created with BPF_F_NO_PREALLOC; loaded, not attached
 * (the verifier is what refuses it).  Two syscalls, no skeleton.
 */
static void probe_dyn_hash(struct ks_probe_result *r)
{
	LIBBPF_OPTS(bpf_map_create_opts, mo, .map_flags = BPF_F_NO_PREALLOC);
	int map, prog;

	r->step = "load";
	map = bpf_map_create(BPF_MAP_TYPE_HASH, "ks_probe_dyn", 8, 8, 1, &mo);
	if (map < 0) {
		r->err = -errno;
		return;
	}
	struct bpf_insn insns[] = {
		/* *(u64 *)(r10 - 8) = 0; r2 = r10 - 8; r1 = map; call map_lookup_elem; r0 = 0; exit */
		{ .code = BPF_ST | BPF_MEM | BPF_DW, .dst_reg = BPF_REG_10, .off = -8, .imm = 0 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_X, .dst_reg = BPF_REG_2, .src_reg = BPF_REG_10 },
		{ .code = BPF_ALU64 | BPF_ADD | BPF_K, .dst_reg = BPF_REG_2, .imm = -8 },
		{ .code = BPF_LD | BPF_DW | BPF_IMM, .dst_reg = BPF_REG_1, .src_reg = BPF_PSEUDO_MAP_FD, .imm = map },
		{ 0 },
		{ .code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_map_lookup_elem },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};

	prog = bpf_prog_load(BPF_PROG_TYPE_PERF_EVENT, "ks_probe_dyn", "GPL", insns, sizeof(insns) / sizeof(insns[0]),
			     NULL);
	r->ok = prog >= 0;
	r->err = prog >= 0 ? 0 : -errno;
	if (prog >= 0)
		close(prog);
	close(map);
}

/*
 * KSIGHT_FEATURES_OFF=NAME[,NAME...] (names as ks_feature_name() gives
 * them): those features are reported missing without a probe, as on a
 * kernel without them, so that the fallbacks are tested where the
 * feature exists (a fallback that runs only on old kernels is otherwise
 * never run here).
 */
static bool turned_off(enum ks_feature f)
{
	const char *s = getenv("KSIGHT_FEATURES_OFF");
	size_t n = strlen(names[f]);

	while (s && *s) {
		if (!strncmp(s, names[f], n) && (s[n] == ',' || s[n] == '\0'))
			return true;
		s = strchr(s, ',');
		if (s)
			s++;
	}
	return false;
}

const struct ks_probe_result *ks_probe(enum ks_feature f)
{
	/* one probe of each feature per process, whichever thread asks first; a result never changes once done */
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static struct ks_probe_result res[KS_FEAT_COUNT];
	static bool done[KS_FEAT_COUNT];

	if (f >= KS_FEAT_COUNT)
		return NULL;
	pthread_mutex_lock(&lock);
	if (!done[f]) {
		done[f] = true;
		if (turned_off(f)) {
			res[f].ok = false;
			res[f].off = true;
			res[f].err = -EOPNOTSUPP;
			res[f].step = "KSIGHT_FEATURES_OFF";
		} else if (f == KS_FEAT_BTF) {
			struct btf *btf = btf__load_vmlinux_btf();

			res[f].ok = btf != NULL;
			res[f].err = btf ? 0 : -errno;
			res[f].step = "load";
			btf__free(btf);
		} else if (f == KS_FEAT_DYN_HASH) {
			probe_dyn_hash(&res[f]);
		} else {
			/* classic tracepoints resolve their ids through tracefs */
			if (f == KS_FEAT_TP)
				ks_tracefs_dir(NULL);
			probe_one(f, &res[f]);
		}
	}
	pthread_mutex_unlock(&lock);
	return &res[f];
}
