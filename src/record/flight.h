/* record --flight: keeps the last SIZE bytes of event chunks in memory and writes only the windows around trigger events. */
#ifndef KS_RECORD_FLIGHT_H
#define KS_RECORD_FLIGHT_H

#include <stdbool.h>
#include <stdint.h>
#include "events/pair.h"
#include "format/recfile.h"
#include "record/recorder.h"

/*
 * States: IDLE (chunks kept in memory, oldest dropped beyond the size),
 * PENDING (a trigger was seen: the recorder drains every CPU, then calls
 * ks_flight_fire, which opens the window of the earliest trigger waiting
 * and writes the kept events in it), AFTER (the window's events are
 * written as their chunks come; with --trigger-all the others are kept),
 * then, with --trigger-all, PENDING again when a later trigger waits, else
 * IDLE; without it DONE (the recording ends).  Events in no window are
 * never written; an event is written at most once.
 */
enum ks_flight_state { KS_FL_IDLE, KS_FL_PENDING, KS_FL_AFTER, KS_FL_DONE };

/* Windows that can wait to be written at once (--trigger-all); triggers in none of them and past the last are dropped and counted. */
#define KS_FLIGHT_MAX_QUEUE 256
/*
 * --trigger-latency: the open starts kept at most, beyond which the oldest
 * is evicted and counted: as many as a quarter of --flight SIZE holds
 * (a power of two, 1024 to 4M).  A start is one kept event: an open start
 * much older than the kept events could only trigger a window cut short.
 */
uint32_t ks_flight_lat_max_open(uint64_t flight_bytes);

struct ks_flight;

struct ks_flight *ks_flight_new(const struct ks_rec_opts *o, int ncpus);
void ks_flight_free(struct ks_flight *fl);
enum ks_flight_state ks_flight_state(const struct ks_flight *fl);

/* Every event as it arrives: tests the trigger; one after the last window's end waits for its own (in time order). */
void ks_flight_see(struct ks_flight *fl, const struct ks_rec_event *e);
/*
 * --trigger-latency: after a full drain of every ring that began at
 * @drained_at (CLOCK_MONOTONIC ns; UINT64_MAX at the end), the starts and
 * ends seen are matched in time order; a pair over the threshold is a
 * trigger at its end, its window reaching back to its start.
 */
void ks_flight_settle(struct ks_flight *fl, uint64_t drained_at);
/* An events chunk the recorder would append: kept, written (the part in the window) or dropped. 0 or -errno. */
int ks_flight_chunk(struct ks_flight *fl, struct ks_rec_writer *w, const struct ks_rec_chunk *c, const void *p,
		    uint32_t len);
/* PENDING, after every CPU was drained: writes the window's kept part; AFTER follows. */
int ks_flight_fire(struct ks_flight *fl, struct ks_rec_writer *w);
/* AFTER: true once @now_ns is far enough past the window's end that its events have all arrived. */
bool ks_flight_after_over(const struct ks_flight *fl, uint64_t now_ns);
/* AFTER, after every CPU was drained: the window is complete; IDLE or DONE follows. */
void ks_flight_window_end(struct ks_flight *fl);
/*
 * At the end, every CPU drained: windows triggered or open are written
 * from what is kept; then losses not yet in a written chunk get an empty
 * chunk each, so the file's add up.  0 or -errno.
 */
int ks_flight_finish(struct ks_flight *fl, struct ks_rec_writer *w);

struct ks_flight_stats {
	uint64_t triggers, written; /* windows opened; events written to the file */
	uint64_t written_lost;	    /* losses the chunks written to the file carry */
	uint64_t dropped;	    /* --trigger-all: triggers not kept, more than KS_FLIGHT_MAX_QUEUE waiting at once */
	uint64_t lat_pairs, lat_over; /* --trigger-latency: pairs matched, and over the threshold */
	struct ks_pair_counts lat;    /* its starts and ends without partner, and evictions */
};
void ks_flight_stats(const struct ks_flight *fl, struct ks_flight_stats *st);

#endif
