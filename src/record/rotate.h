/* Where a recording's chunks go: one file, one file capped by --max-size, or rotated files FILE.0, FILE.1... (--rotate, --keep). */
#ifndef KS_RECORD_ROTATE_H
#define KS_RECORD_ROTATE_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include "format/recfile.h"

struct ks_rec_out {
	struct ks_rec_writer w;
	const char *base;	/* -o */
	uint64_t max_size;	/* --max-size: bytes of the file, 0: none */
	uint64_t rotate_size;	/* --rotate: bytes of each file, 0: no rotation */
	int keep;		/* --keep: files kept when rotating (0: all) */
	uint64_t reserve;	/* bytes kept free in a file for its closing chunks (trailer, last losses) */
	/* writes the manifest and formats of a new file (rotation.index in @index) */
	int (*write_head)(void *ctx, struct ks_rec_writer *w, uint64_t index);
	void *ctx;
	char path[PATH_MAX];	/* of the current file */
	uint64_t index;		/* of the current file */
	uint64_t file_events, file_lost; /* in the current file */
	uint64_t events;	/* written over all files */
	uint64_t bytes, chunks;	/* written over all files */
	bool open, full;	/* full: --max-size reached, nothing more goes in */
};

/* Creates the first file (FILE, or FILE.0 when rotating) and writes its head; 0 or -errno after p_err. */
int ks_rec_out_open(struct ks_rec_out *o);
/*
 * Appends the events chunk @c (payload @p, @len bytes), split at event
 * boundaries where a file ends: the part that fits goes into this file,
 * the rest into the next one (rotating), or nowhere (--max-size: then
 * -ENOSPC, *@written saying how many of its events went in).  A chunk
 * without events (losses only) always goes in.
 */
int ks_rec_out_events(struct ks_rec_out *o, const struct ks_rec_chunk *c, const void *p, uint32_t len,
		      uint32_t *written);
/* Adds the current file's own keys (file.events, file.lost, rotation.*) to a trailer being built. */
void ks_rec_out_trailer_kv(const struct ks_rec_out *o, struct ks_rec_kv *kv);
/* Appends a chunk that is not events (the trailer) to the current file. */
int ks_rec_out_append(struct ks_rec_out *o, struct ks_rec_chunk *c, const void *p, uint32_t len);
int ks_rec_out_close(struct ks_rec_out *o);

#endif
