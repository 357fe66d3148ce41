/* Latency pairs: a START/END event spec with key fields, parsed against formats, and a streaming matcher of starts to ends. */
#ifndef KS_EVENTS_PAIR_H
#define KS_EVENTS_PAIR_H

#include <stddef.h>
#include <stdint.h>

struct tep_handle;
struct tep_event;
struct tep_format_field;

#define KS_PAIR_MAX_KEYS 4

/* A latency pair: from an event of @a to the next of @b with the same key fields. */
struct ks_pair {
	const char *spec; /* "sys:a/sys:b" as given */
	struct tep_event *a, *b;
	int nkeys;
	struct tep_format_field *ka[KS_PAIR_MAX_KEYS], *kb[KS_PAIR_MAX_KEYS];
};

/*
 * Parses "sys:a/sys:b" and "f1=f2,f3" against the formats in @tep;
 * -EINVAL after one p_err naming the part that is wrong.  @opt and @kopt
 * name where the spec and the keys came from ("--pair", "--key"), @where
 * where the events were looked for when one is missing ("in this recording").
 */
int ks_pair_parse_tep(struct ks_pair *p, struct tep_handle *tep, const char *spec, const char *keys, const char *opt,
		      const char *kopt, const char *where);

/* What an event is to a pair: a start, an end, or both (START and END the same event). */
enum { KS_PAIR_START = 1, KS_PAIR_END = 2 };

/*
 * The roles of @ev in @p, and its key values (numbers, or hashes of
 * strings) as a start in @ka and as an end in @kb; 0 when it has none,
 * or when a key field lies beyond the @len bytes of @data.
 */
unsigned ks_pair_keys(const struct ks_pair *p, struct tep_handle *tep, const struct tep_event *ev, const void *data,
		      uint32_t len, uint64_t ka[KS_PAIR_MAX_KEYS], uint64_t kb[KS_PAIR_MAX_KEYS]);

/* Starts and ends a pair run left without partner. */
struct ks_pair_counts {
	uint64_t unmatched; /* ends without a start */
	uint64_t open;	    /* starts without an end (at the end, or now) */
	uint64_t restarted; /* starts replaced by a later start of the same key */
	uint64_t evicted;   /* open starts pushed out, the oldest first, by a bounded matcher */
};

/*
 * The open starts by key, in the order they came.  Unbounded (growing)
 * with @max_open 0; else at most @max_open (rounded up to a power of two)
 * are kept and the oldest gives way to a new one, counted as evicted.
 */
struct ks_pairer;
struct ks_pairer *ks_pairer_new(size_t max_open);
/* The memory an open start takes (its ring entry and hash bucket), for sizing @max_open from a budget. */
size_t ks_pairer_open_bytes(void);
void ks_pairer_free(struct ks_pairer *m);
/*
 * One event of @roles with its keys, events fed in time order: an end
 * finds its start first (1, *@start_ts set; the start is used up), then a
 * start opens (or restarts) its key.  0 when no pair ended, or -ENOMEM.
 */
int ks_pairer_feed(struct ks_pairer *m, unsigned roles, const uint64_t *ka, const uint64_t *kb, uint64_t ts,
		   uint64_t *start_ts);
void ks_pairer_counts(const struct ks_pairer *m, struct ks_pair_counts *pc);

#endif
