/* Key columns of per-task rows, shared by the collectors that aggregate by pid, comm or cgroup. */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include "core/bpfutil.h"
#include "core/filter.h"
#include "core/cgroup.h"
#include "core/rowkey.h"

void ks_row_task_key(struct ks_row *row, enum ks_task_by by, const struct ks_row_key *k, int pid_comm_fd)
{
	char b[PATH_MAX];

	switch (by) {
	case KS_TASK_PID:
		ks_pid_comm_peek(pid_comm_fd, k->id, b);
		ks_row_key_num(row, "pid", k->id);
		ks_row_key_str(row, "comm", b);
		break;
	case KS_TASK_COMM:
		memcpy(b, k->comm, KS_COMM_LEN);
		b[KS_COMM_LEN - 1] = 0;
		ks_row_key_str(row, "comm", b);
		break;
	case KS_TASK_CGROUP:
		if (ks_cgroup_path(k->cgroup, b, sizeof(b)))
			snprintf(b, sizeof(b), "?");
		ks_row_key_str(row, "cgroup", b);
		ks_row_key_num(row, "cgroup_id", (int64_t)k->cgroup);
		break;
	}
}

bool ks_row_key_of_filter(const struct ks_filter *f, enum ks_task_by by, struct ks_row_key *k)
{
	memset(k, 0, sizeof(*k));
	if (by == KS_TASK_PID && (f->flags & KS_F_TGID))
		k->id = f->tgid;
	else if (by == KS_TASK_COMM && (f->flags & KS_F_COMM))
		memcpy(k->comm, f->comm, sizeof(k->comm));
	else if (by == KS_TASK_CGROUP && (f->flags & KS_F_CGROUP))
		k->cgroup = f->cgroup_id;
	else
		return false;
	return true;
}

int ks_row_key_cmp(enum ks_task_by by, const struct ks_row_key *a, const struct ks_row_key *b)
{
	if (by == KS_TASK_PID)
		return (a->id > b->id) - (a->id < b->id);
	if (by == KS_TASK_COMM)
		return memcmp(a->comm, b->comm, sizeof(a->comm));
	return (a->cgroup > b->cgroup) - (a->cgroup < b->cgroup);
}

bool ks_row_key_eq(enum ks_task_by by, const struct ks_row_key *a, const struct ks_row_key *b)
{
	if (by == KS_TASK_PID)
		return a->id == b->id;
	if (by == KS_TASK_COMM)
		return !memcmp(a->comm, b->comm, sizeof(a->comm));
	return a->cgroup == b->cgroup;
}
