/* ksight record's engine: resolves tracepoints, loads bpf/record.bpf.c, drains per-CPU rings into file chunks, counts every loss. */
#ifndef KS_RECORD_RECORDER_H
#define KS_RECORD_RECORDER_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include "ksight/filter.h"
#include "ksight/record.h"
#include "ksight/recfilter.h"
#include "events/pair.h"

struct ks_anon;
struct ks_cmd;
struct ks_rec_collect;

struct ks_rec_tp {
	char *sys, *name;
	char *format; /* tracefs format text */
	int id;
};

struct ks_rec_tps {
	struct ks_rec_tp *v;
	int n, cap;
};

/*
 * Adds every tracepoint matching @spec ("SYS:EVENT", globs in both parts)
 * to @tps, reading its format.  -ENOENT (after a pointed p_err) when none
 * matches, another negative errno when tracefs cannot be read.
 */
int ks_rec_tps_add(struct ks_rec_tps *tps, const char *spec);
void ks_rec_tps_free(struct ks_rec_tps *tps);

/* --trigger-latency START/END KEYS>DURATION: a pair longer than the threshold triggers at its end. */
struct ks_rec_latency {
	char *pair_text, *keys; /* "START/END" and "F[=G],..." as given */
	struct ks_pair pair;	/* against tep's formats of the recorded events */
	struct tep_handle *tep;
	uint64_t threshold_ns;
};

/*
 * Parses @arg, adding START and END to @tps when -e did not name them (so
 * they are recorded: the window shows both), and checks the keys against
 * their formats.  -EINVAL after one p_err pointing at the wrong part.
 */
int ks_rec_latency_parse(struct ks_rec_latency *l, const char *arg, struct ks_rec_tps *tps);
void ks_rec_latency_free(struct ks_rec_latency *l);

struct ks_rec_opts {
	const struct ks_rec_tps *tps;
	struct ks_filter filter;
	uint32_t sample_n;   /* 0/1: every event */
	uint64_t buf_size;   /* bytes per ring; 0: 1M, or less to fit max_memory */
	uint64_t max_memory; /* --max-memory: the maps' budget at the possible-CPU count (0: the default) */
	bool shared;	     /* one ring for all CPUs */
	double duration;     /* seconds; 0: until a stop signal */
	const char *output;
	const char *manifest; /* "key\tvalue\n" lines the command adds (cmdline, options) */
	size_t manifest_len;
	volatile sig_atomic_t *stop; /* set by a signal handler */
	int target_pid;	     /* -p: the run also ends when it exits (0: none) */
	uint64_t max_size;   /* --max-size: the file stops growing here, the recording ends (0: none) */
	uint64_t rotate_size; /* --rotate: FILE.0, FILE.1... of at most this many bytes (0: one file) */
	int keep;	     /* --keep: rotated files kept, the oldest deleted (0: all) */
	const struct ks_anon *anon; /* --anonymize: events and manifest rewritten before they are written */
	const struct ks_flt_prog *filters; /* --filter compiled for each of tps (NULL: none) */
	/* --flight: keep flight_bytes of events in memory, write the windows around trigger events */
	uint64_t flight_bytes;		   /* 0: off */
	const struct ks_flt_prog *trigger; /* per tps; n == 0: that event never triggers; NULL: no --trigger */
	const struct ks_rec_latency *latency; /* --trigger-latency (NULL: none); either trigger opens a window */
	uint64_t before_ns, after_ns;
	bool trigger_all;		   /* every trigger (after the previous window), not only the first */
	struct ks_cmd *cmd; /* -- CMD, spawned: started once attached, the run ends at its exit (NULL: none) */
	struct ks_rec_collect *collect; /* --collect: instances set up, opened and ticked here (record/collect.h); NULL: none */
};

struct ks_rec_stats {
	int ncpus;
	uint64_t produced, filtered, sampled_out, recorded, lost, cut, missed;
	uint64_t dropped; /* after --max-size was reached */
	uint64_t chunks, bytes, files;
	uint64_t triggers, flight_written; /* --flight: windows, and the events written (the rest: dropped) */
	uint64_t triggers_dropped;	   /* --flight --trigger-all: triggers with no room to wait for their window */
	uint64_t lat_pairs, lat_over;	   /* --trigger-latency: pairs matched, and longer than the threshold */
	struct ks_pair_counts lat;	   /* and the starts and ends left without partner */
	bool full;  /* --max-size was reached */
	bool exact; /* per CPU, produced == filtered + sampled_out + recorded + lost + dropped */
};

/*
 * The --filter expression @text compiled for each of @tps (an array of
 * tps->n, to free), or NULL after one pointed error (ks_flt_report).
 */
struct ks_flt_prog *ks_rec_filters(const char *text, const struct ks_rec_tps *tps);
/* The same for --trigger, where an event without the fields never triggers (n == 0); NULL when none has them. */
struct ks_flt_prog *ks_rec_triggers(const char *text, const struct ks_rec_tps *tps);

/* Records until the duration ends or *@o->stop; 0 or negative errno (after p_err). */
int ks_rec_run(const struct ks_rec_opts *o, struct ks_rec_stats *st);

#endif
