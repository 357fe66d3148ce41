/* The row key of collectors that aggregate per task (pid, comm, cgroup) or per small number (disk, op). */
#ifndef KSIGHT_ROWKEY_H
#define KSIGHT_ROWKEY_H

#include "filter.h"

/* Per-task aggregation modes; collectors map their --by keys onto these. */
enum ks_task_by {
	KS_TASK_PID = 1,
	KS_TASK_COMM = 2,
	KS_TASK_CGROUP = 3,
};

/*
 * gen selects the buffer half; of the rest only what the mode uses is
 * set: id (a tgid, a dev_t, an op), cgroup (a v2 cgroup id) or comm.
 */
struct ks_row_key {
	__u32 gen;
	__u32 id;
	__u64 cgroup;
	char comm[KS_COMM_LEN];
};

_Static_assert(sizeof(struct ks_row_key) == 32, "ks_row_key layout");

#endif /* KSIGHT_ROWKEY_H */
