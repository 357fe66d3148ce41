/* Feature probe: one trivial program per hook type; the loader loads and attaches each one for real. */
#include "common.bpf.h"

SEC("fentry/vfs_read")
int BPF_PROG(probe__fentry)
{
	return 0;
}

SEC("kprobe/vfs_read")
int BPF_KPROBE(probe__kprobe)
{
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(probe__tp_btf)
{
	return 0;
}

SEC("raw_tp/sched_switch")
int BPF_PROG(probe__raw_tp)
{
	return 0;
}

SEC("tracepoint/sched/sched_switch")
int probe__tp(void *ctx)
{
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(probe__uprobe)
{
	return 0;
}

/* loaded as uprobe_multi by the loader (libbpf 1.1 knows no "uprobe.multi" section) */
SEC("uprobe")
int BPF_KPROBE(probe__uprobe_multi)
{
	return 0;
}

SEC("perf_event")
int probe__perf_event(void *ctx)
{
	return 0;
}

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} probe_ringbuf SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} probe_task_storage SEC(".maps");
