/* Benchmark floor for bench/funclat.sh: an empty uprobe and an empty uretprobe, so only the traps' and the BPF dispatch's own cost remains. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

/* the names of bpf/funclat.bpf.c's programs: funclat_load attaches them alike */
SEC("uprobe")
int fl_uentry(void *ctx)
{
	return 0;
}

SEC("uretprobe")
int fl_ureturn(void *ctx)
{
	return 0;
}
