/* record --profile: the profile's stacks as one KS_REC_STACKS chunk of a recording, written and read back (checked) as struct ks_stacks. */
#ifndef KS_FORMAT_RECSTACKS_H
#define KS_FORMAT_RECSTACKS_H

#include <stdbool.h>
#include "format/recfile.h"
#include "output/stacks.h"

#define KS_REC_STACKS_VERSION 1
/* a stack deeper than this is damage: the profile keeps 127 kernel and 127 user frames, with inlined ones and the comm */
#define KS_REC_STACKS_MAX_DEPTH 4096
/* a frame name longer than this is damage (C++ names run to a few KiB) */
#define KS_REC_STACKS_MAX_NAME 8192

/*
 * Appends @st (its named stacks, not the address view) as a KS_REC_STACKS
 * chunk: @head's "key\tvalue\n" lines, then version, sample_type, unit,
 * period_ns, time_ns, duration_ns, total, frames, stacks, raw_len and
 * zlib_len, an empty line, then the body deflated: each frame as u32
 * length, u8 kind, the name; each stack as u32 depth, u64 value and its
 * frame ids (u32, root first).  0 or -errno (-EFBIG past KS_REC_MAX_PAYLOAD).
 */
int ks_rec_stacks_append(struct ks_rec_writer *w, struct ks_rec_chunk *c, const char *head, size_t head_len,
			 const struct ks_stacks *st);

/*
 * Adds the stacks of one KS_REC_STACKS payload @p (@len bytes, from a
 * stranger's file) to @out, which the first call initialises
 * (*@inited).  Checked whole before anything is added: the lines end at
 * an empty line, the version is known, sample type and unit are ones
 * ksight writes, the body inflates to exactly raw_len (at most
 * KS_REC_MAX_PAYLOAD), every frame and stack fits in it with nothing
 * left, names are printable, kinds and frame ids in range, depths within
 * KS_REC_STACKS_MAX_DEPTH and the values add up to total.  0, -ENOMEM,
 * -EBADMSG (one line in @why), or -EPROTO for another version (@why).
 */
int ks_rec_stacks_parse(const char *p, size_t len, struct ks_stacks *out, bool *inited, char *why, size_t whylen);

/* What ks_rec_stacks_load found. */
struct ks_rec_stacks_info {
	size_t chunks;	 /* stacks chunks read */
	size_t refused;	 /* left out: damaged or of another version (the first's reason in @why) */
	char why[160];
};

/*
 * The stacks of the recording @r (every intact KS_REC_STACKS chunk,
 * merged) as @out, to free with ks_stacks_free; frames interned by name
 * and kind.  Refused chunks are counted in @info, never fatal.  0 (with
 * @info->chunks 0 when there are none: @out is then empty), or -ENOMEM
 * or a read's -errno.
 */
int ks_rec_stacks_load(const struct ks_rec_reader *r, struct ks_stacks *out, struct ks_rec_stacks_info *info);

#endif
