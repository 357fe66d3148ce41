/* ksight record: the event header in the ring buffers and the file, per-event settings and per-CPU counters shared with bpf/record.bpf.c. */
#ifndef KSIGHT_RECORD_H
#define KSIGHT_RECORD_H

#include "types.h"

/* Largest raw record kept (fixed part and __data_loc payloads); longer ones are cut and counted. */
#define KS_REC_MAX_RAW 4096
/* __data_loc / __rel_loc fields whose payload is followed (more are recorded up to the fixed part). */
#define KS_REC_MAX_DLOC 8

/* One recorded tracepoint hit, then @len bytes of the raw record (from common_type on), padded to 8. */
struct ks_rec_event {
	__u64 ts; /* bpf_ktime_get_ns: CLOCK_MONOTONIC */
	__u32 tgid;
	__u16 len;
	__u16 cpu;
	char comm[16];
};

/* How to size one event's raw record, by tracepoint id. */
struct ks_rec_evcfg {
	__u16 fixed; /* bytes of the fixed part (common fields included) */
	__u8 ndloc;
	__u8 on;
	__u16 dloc[KS_REC_MAX_DLOC]; /* offsets of the dynamic fields; bit 15: __rel_loc */
};

#define KS_REC_DLOC_REL 0x8000
/* ks_rec_evcfg.on: bit 0 the event is configured; bit 1 ksight's own hits are recorded too */
#define KS_REC_ON 1
#define KS_REC_ON_SELF 2

/* Per CPU: produced = filtered + sampled_out + recorded + lost, exactly (recorded is counted in user space). */
struct ks_rec_counts {
	__u64 produced;	   /* hits that passed the pid/tid/cgroup/cpu/comm filters */
	__u64 sampled_out; /* left out by --sample */
	__u64 lost;	   /* ring buffer full */
	__u64 cut;	   /* recorded, but longer than KS_REC_MAX_RAW */
	__u64 filtered;	   /* left out by --filter */
};

/* System-call numbers the recorder takes from the raw sys_enter/sys_exit tracepoints (below this) */
#define KS_REC_SYS_NR 1024

/* A system-call event taken from the raw tracepoints, by number (exits at KS_REC_SYS_NR + number). */
struct ks_rec_sysev {
	__u64 cookie; /* as a classic tracepoint's attach cookie; 0: not recorded */
};

#endif
