/* User side of struct ks_row_key: key columns of per-task rows, and the row a filter pins down. */
#ifndef KS_CORE_ROWKEY_H
#define KS_CORE_ROWKEY_H

#include <stdbool.h>
#include "core/report.h"
#include "ksight/rowkey.h"

/* The key columns ks_row_task_key can add, for the schemas' sort-key check. */
#define KS_TASK_KEYS "pid", "comm", "cgroup", "cgroup_id"

/*
 * Adds the key columns of @k to @row: "pid" and "comm" (the command name
 * from the BPF LRU map @pid_comm_fd, see ks_pid_comm_peek), "comm", or
 * "cgroup" (the path below the v2 mount) and "cgroup_id".
 */
void ks_row_task_key(struct ks_row *row, enum ks_task_by by, const struct ks_row_key *k, int pid_comm_fd);
/* True, with @k filled (gen 0), when the filters of @f leave a single row of mode @by. */
bool ks_row_key_of_filter(const struct ks_filter *f, enum ks_task_by by, struct ks_row_key *k);
/* True when @a and @b name the same row of mode @by, whatever their halves. */
bool ks_row_key_eq(enum ks_task_by by, const struct ks_row_key *a, const struct ks_row_key *b);
/* An order of the keys of mode @by (the field it names only, as ks_row_key_eq): <0, 0, >0. */
int ks_row_key_cmp(enum ks_task_by by, const struct ks_row_key *a, const struct ks_row_key *b);

#endif
