/* A recording opened for reading: manifest, formats (libtraceevent), every intact event merged across CPUs by time. No libbpf, no root. */
#ifndef KS_FORMAT_RECORDING_H
#define KS_FORMAT_RECORDING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "format/fmtcheck.h"
#include "format/recfile.h"

struct tep_handle;
struct tep_event;

struct ks_rec_ev {
	const struct ks_rec_event *e; /* header; the raw record follows */
	struct tep_event *ev;
	uint32_t chunk;
};

struct ks_recording {
	struct ks_rec_reader rd;
	char *manifest, *trailer; /* "key\tvalue\n" text, "" when absent */
	size_t manifest_len, trailer_len;
	struct tep_handle *tep;
	void **payloads;	/* per chunk (NULL for other than events) */
	struct ks_rec_ev *evs;	/* sorted by time, ties in file order */
	size_t nev;
	int ncpus;		/* 1 + the highest CPU seen */
	uint64_t *recorded;	/* per CPU */
	uint64_t *lost;		/* per CPU, from the chunks' lost-since-previous */
	uint64_t bad_events;	/* records that did not fit their format: left out */
	uint64_t unknown_events; /* records of an event without a format (or a refused one): left out */
	uint64_t bad_formats;	/* formats refused (src/format/fmtcheck.h) */
	char bad_format_why[208]; /* "system: why" of the first */
	int *refused_ids;	/* IDs of refused formats that are in @tep all the same */
	size_t nrefused_ids;
	int *raw_print_ids;	/* IDs of formats whose print format did not parse (left empty in @tep) */
	size_t nraw_print_ids;
	uint64_t chunk_events;	/* events the intact chunks hold, by their headers */
	int64_t trailer_events;	/* events the trailer says the file holds; -1: no trailer */
	uint64_t first_ts, last_ts;
	void *anon_mem; /* the events rewritten by ks_anon_recording, when it ran */
	/* record --collect: the collectors' reports, in file order (their payloads in @payloads) */
	struct ks_rec_rep {
		struct ks_rec_report_view v;
		const struct ks_rec_chunk *hdr; /* count: the interval (0 for a total), window, lost */
	} *reps;
	size_t nreps;
	uint64_t bad_reports;	    /* report chunks that failed ks_rec_report_check: left out */
	char bad_report_why[160];   /* the first one's reason */
};

/* Opens @path and decodes it; 0 or negative errno (-EBADMSG, -EPROTO: not a recording). */
int ks_recording_load(struct ks_recording *rec, const char *path);
void ks_recording_free(struct ks_recording *rec);
/* True when event @id's print format did not parse: its fields are printed raw, as libtraceevent does then. */
bool ks_rec_raw_print(const struct ks_recording *rec, int id);
/* One warning line (p_warn) per kind of damage in @rec: cut, damaged, missing or repeated chunks, refused formats, counts. */
void ks_recording_warn(const struct ks_recording *rec, const char *file);

/* True when the trailer's event count is not what the chunks hold (chunks removed or repeated). */
static inline bool ks_recording_count_differs(const struct ks_recording *rec)
{
	return rec->trailer_events >= 0 && (uint64_t)rec->trailer_events != rec->chunk_events;
}
/* "system:name" of @ev into @buf. */
const char *ks_rec_ev_name(const struct tep_event *ev, char *buf, size_t len);
/* A manifest value as a number (0 when absent). */
uint64_t ks_rec_manifest_u64(const struct ks_recording *rec, const char *key);

#endif
