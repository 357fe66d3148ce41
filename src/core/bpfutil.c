/* libbpf-adjacent helpers shared by collectors. */
#include <linux/membarrier.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "core/bpfutil.h"

void ks_sync_programs(void)
{
	/* MEMBARRIER_CMD_GLOBAL is synchronize_rcu(); refused under nohz_full */
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) != 0) {
		struct timespec ts = { 0, 20 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
}

int ks_ncpus(void)
{
	static int n;

	if (!n) {
		n = libbpf_num_possible_cpus();
		if (n < 1)
			n = 1;
	}
	return n;
}

uint32_t ks_pow2_at_least(uint64_t v, uint32_t cap)
{
	uint64_t p = 1;

	while (p < v && p < cap)
		p <<= 1;
	return (uint32_t)p;
}

uint64_t ks_pid_max(void)
{
	unsigned long long v = 4194304;
	FILE *f = fopen("/proc/sys/kernel/pid_max", "r");

	if (f) {
		if (fscanf(f, "%llu", &v) != 1)
			v = 4194304;
		fclose(f);
	}
	return v;
}
