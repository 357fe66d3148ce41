/* Each collector's "bytes of a map entry -> report row" step, apart from the maps so that unit tests can feed it byte buffers. */
#ifndef KS_COLLECTORS_ROWS_H
#define KS_COLLECTORS_ROWS_H

#include <stdbool.h>
#include "core/report.h"
#include "collectors/sched.h"
#include "ksight/biolat.h"
#include "ksight/offcpu.h"
#include "ksight/runqlat.h"
#include "ksight/syscalls.h"

/*
 * syscalls, hash modes (pid, comm, cgroup and the combined ones): one
 * shared row @s of key @k into a new row of @r.  @pid_comm_fd is the
 * pid -> comm map that names a pid (-1: none, the name is "?").  Returns
 * 0 or -ENOMEM.
 */
int ks_syscalls_row(struct ks_report *r, enum ks_sc_by by, bool count_only, const struct ks_sc_key *k,
		    const struct ks_sc_srow *s, int pid_comm_fd);

/*
 * runqlat: the @nvals per-CPU copies @v of the row named @id summed into a
 * new row of @r (sorted by total wait; *@rowp is the row).  Returns 1, 0
 * when the copies hold nothing (no row), or -ENOMEM.
 */
int ks_runqlat_row(struct ks_report *r, enum ks_sched_by by, const struct ks_sched_rowid *id,
		   const struct ks_rq_stat *v, int nvals, struct ks_row **rowp);

/* offcpu: as ks_runqlat_row; @id->sub is the state the thread blocked in. */
int ks_offcpu_row(struct ks_report *r, enum ks_sched_by by, const struct ks_sched_rowid *id,
		  const struct ks_off_stat *v, int nvals);

/*
 * biolat's stale check (src/collectors/biolat.c): whether a request in
 * flight of operation @op (KS_BL_OP_*; KS_BL_OP_SEQ: a flush-sequence
 * write parked between its data step and its end) and @bytes, stamped at
 * @stamp (its issue, or its allocation; 0: unknown), is one that the
 * kernel's in-flight count covers until after its block_rq_complete and
 * that was there before @t0, the clock reading taken before the count
 * read 0 (see ks_blk_quiet.inflight): such a request, still in the maps,
 * completed unseen.  @precise: the count is the per-CPU one of Linux
 * 6.16+, which covers a request from when it is made to its end (flush
 * requests too, through the request that asked for them); before, only
 * requests started in the driver count, so flushes, fsync's data-less
 * write and parked writes are never taken for stale.  Passthrough
 * commands (op other) are counted by neither.
 */
bool ks_bl_stale(uint32_t op, uint32_t bytes, uint64_t stamp, uint64_t t0, bool precise);

#endif
