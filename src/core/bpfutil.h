/* Small helpers around libbpf used by several collectors: grace periods, per-CPU sums, map sizing. */
#ifndef KS_CORE_BPFUTIL_H
#define KS_CORE_BPFUTIL_H

#include <stdint.h>

/*
 * Waits until every BPF program that may have read the old buffer index
 * has finished: non-sleepable programs run inside an RCU read section, so
 * a full grace period (membarrier's global command) is enough.
 */
void ks_sync_programs(void);
/* Number of possible CPUs, as per-CPU map values are laid out; >= 1. */
int ks_ncpus(void);
/* Smallest power of two >= @v, at least 1 and at most @cap. */
uint32_t ks_pow2_at_least(uint64_t v, uint32_t cap);
/* /proc/sys/kernel/pid_max, or 4194304 when unreadable. */
uint64_t ks_pid_max(void);

#endif
