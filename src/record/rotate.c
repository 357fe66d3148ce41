/* The recording's output: one file, capped by --max-size, or rotated (--rotate SIZE --keep N), each file complete with its own manifest, formats and trailer. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "core/file.h"
#include "core/log.h"
#include "record/rotate.h"

static int file_name(const struct ks_rec_out *o, uint64_t index, char *buf, size_t len)
{
	int n = o->rotate_size ? snprintf(buf, len, "%s.%llu", o->base, (unsigned long long)index)
			       : snprintf(buf, len, "%s", o->base);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int start_file(struct ks_rec_out *o)
{
	int err = file_name(o, o->index, o->path, sizeof(o->path));

	if (!err)
		err = ks_rec_create(&o->w, o->path);
	if (err) {
		p_err("cannot create '%s': %s", o->path, ks_file_strerror(o->path, err));
		return err;
	}
	o->open = true;
	o->file_events = o->file_lost = 0;
	err = o->write_head(o->ctx, &o->w, o->index);
	if (err)
		p_err("cannot write '%s': %s", o->path, strerror(-err));
	return err;
}

int ks_rec_out_open(struct ks_rec_out *o)
{
	o->index = 0;
	return start_file(o);
}

/* The size a file may reach before its closing chunks: UINT64_MAX when unlimited. */
static uint64_t limit(const struct ks_rec_out *o)
{
	uint64_t l = o->rotate_size ? o->rotate_size : o->max_size;

	if (!l)
		return UINT64_MAX;
	return l > o->reserve ? l - o->reserve : 0;
}

static void count_closed(struct ks_rec_out *o)
{
	o->bytes += o->w.bytes;
	o->chunks += o->w.seq;
}

/* Closes this file with a trailer of its own, opens the next, and deletes the one past --keep. */
static int rotate(struct ks_rec_out *o)
{
	struct ks_rec_chunk c = { .type = KS_REC_TRAILER };
	struct ks_rec_kv kv = { 0 };
	char next[PATH_MAX];
	int err;

	err = file_name(o, o->index + 1, next, sizeof(next));
	if (err)
		return err;
	ks_rec_out_trailer_kv(o, &kv);
	ks_rec_kv_add(&kv, "rotation.next", "%s", next);
	err = kv.err ? kv.err : ks_rec_append(&o->w, &c, kv.buf, (uint32_t)kv.len);
	ks_rec_kv_free(&kv);
	count_closed(o);
	if (!err)
		err = ks_rec_close(&o->w);
	else
		ks_rec_close(&o->w);
	o->open = false;
	if (err) {
		p_err("writing '%s': %s", o->path, strerror(-err));
		return err;
	}
	o->index++;
	if (o->keep > 0 && o->index >= (uint64_t)o->keep) {
		char old[PATH_MAX];

		/* the oldest beyond N goes: the N newest stay, the one being written among them */
		if (!file_name(o, o->index - (uint64_t)o->keep, old, sizeof(old)) && unlink(old) && errno != ENOENT)
			p_warn("cannot delete '%s' (past --keep %d): %s", old, o->keep, strerror(errno));
	}
	return start_file(o);
}

/* @c's header with no events, carrying @lost: losses go into the file even once it is full (inside the reserve). */
static int append_losses(struct ks_rec_out *o, const struct ks_rec_chunk *c, uint64_t lost)
{
	struct ks_rec_chunk piece = *c;
	int err;

	piece.count = 0;
	piece.first_ts = piece.last_ts = 0;
	piece.lost = lost;
	err = ks_rec_append(&o->w, &piece, NULL, 0);
	if (!err)
		o->file_lost += lost;
	return err;
}

int ks_rec_out_events(struct ks_rec_out *o, const struct ks_rec_chunk *c, const void *p, uint32_t len,
		      uint32_t *written)
{
	uint32_t off = 0;
	uint64_t lost = c->lost;
	int err;

	*written = 0;
	if (!len)
		return append_losses(o, c, lost);
	if (o->full) {
		/* full since another CPU's flush: this CPU's events are dropped, its losses still go in */
		if (lost)
			append_losses(o, c, lost);
		return -ENOSPC;
	}
	while (off < len) {
		struct ks_rec_chunk piece = *c;
		uint64_t lim = limit(o), room;
		uint32_t end = off, n = 0, at;
		const struct ks_rec_event *e, *first = NULL, *last = NULL;

		room = o->w.bytes + sizeof(piece) < lim ? lim - o->w.bytes - sizeof(piece) : 0;
		for (at = off; (e = ks_rec_next_event(p, len, &at));) {
			if (at - off > room)
				break;
			if (!first)
				first = e;
			last = e;
			end = at;
			n++;
		}
		if (!n) {
			if (o->rotate_size && o->file_events) {
				err = rotate(o);
				if (err)
					return err;
				continue;
			}
			if (o->rotate_size || !o->max_size) {
				/* one event and the head do not fit a whole file: it gets one all the same */
				at = off;
				first = last = ks_rec_next_event(p, len, &at);
				if (!first)
					return -EBADMSG;
				end = at;
				n = 1;
			} else {
				o->full = true;
				/* the losses this chunk carried still go in, as a chunk of none */
				if (lost)
					append_losses(o, c, lost);
				return -ENOSPC;
			}
		}
		piece.count = n;
		piece.first_ts = first->ts;
		piece.last_ts = last->ts;
		piece.lost = lost;
		err = ks_rec_append(&o->w, &piece, (const char *)p + off, end - off);
		if (err)
			return err;
		o->file_events += n;
		o->file_lost += lost;
		o->events += n;
		*written += n;
		lost = 0;
		off = end;
	}
	return 0;
}

int ks_rec_out_append(struct ks_rec_out *o, struct ks_rec_chunk *c, const void *p, uint32_t len)
{
	return ks_rec_append(&o->w, c, p, len);
}

void ks_rec_out_trailer_kv(const struct ks_rec_out *o, struct ks_rec_kv *kv)
{
	ks_rec_kv_add(kv, "file.events", "%llu", (unsigned long long)o->file_events);
	ks_rec_kv_add(kv, "file.lost", "%llu", (unsigned long long)o->file_lost);
	if (o->rotate_size) {
		ks_rec_kv_add(kv, "rotation.index", "%llu", (unsigned long long)o->index);
		/* events of the whole session up to the end of this file: what earlier (maybe deleted) files held */
		ks_rec_kv_add(kv, "rotation.events_through", "%llu", (unsigned long long)o->events);
	}
	if (o->max_size)
		ks_rec_kv_add(kv, "max_size", "%llu", (unsigned long long)o->max_size);
}

int ks_rec_out_close(struct ks_rec_out *o)
{
	if (!o->open)
		return 0;
	count_closed(o);
	o->open = false;
	return ks_rec_close(&o->w);
}
