/* libFuzzer target: the recording reader (chunks, formats, events, every renderer) on any file bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "events/filter.h"
#include "format/recfile.h"
#include "format/recording.h"
#include "output/trace.h"
#include "core/log.h"

/*
 * Most mutations break a chunk's CRC32C, and the reader then skips it
 * before any decoder sees it.  So the mutator below works on the chunks
 * (a payload or a header mutated, a chunk repeated or removed) and fixes
 * the CRC of what it changed, and when the first byte of an input is odd,
 * the CRCs of the chunks that follow one another from the header are
 * recomputed: the formats, events and renderers get the mutated bytes.
 * (The first byte is not part of the file.)
 */
#define HDR sizeof(struct ks_rec_header)
#define CH sizeof(struct ks_rec_chunk)
#define MAX_CHUNKS 256

static void fix_crc(uint8_t *at)
{
	struct ks_rec_chunk c;

	memcpy(&c, at, CH);
	c.crc = 0;
	c.crc = ks_crc32c(ks_crc32c(0, &c, CH), at + CH, c.len);
	memcpy(at, &c, CH);
}

/* Offsets of the chunks that follow one another from the header, up to the first damaged one. */
static size_t walk(const uint8_t *p, size_t size, size_t *at)
{
	size_t off = HDR, n = 0;

	while (n < MAX_CHUNKS && off + CH <= size) {
		struct ks_rec_chunk c;

		memcpy(&c, p + off, CH);
		if (c.magic != KS_REC_CHUNK_MAGIC || c.len > size - off - CH)
			break;
		at[n++] = off;
		off += CH + c.len;
	}
	return n;
}

static void fix_crcs(uint8_t *p, size_t size)
{
	size_t at[MAX_CHUNKS], n = walk(p, size, at);

	for (size_t i = 0; i < n; i++)
		fix_crc(p + at[i]);
}

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

/*
 * Structure-aware: one chunk (of the file after the mode byte) gets its
 * payload or its header mutated, or is repeated or removed; its CRC is
 * then right, so the parser behind it (a format's, the events') is what
 * the mutation reaches.  One time in four the bytes are mutated as they
 * are, for damage the reader must survive.
 */
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
	size_t at[MAX_CHUNKS], n, off, tail_off, tail_len, len, room;
	uint8_t *f = data + 1, *tail;
	struct ks_rec_chunk c;

	/* an input can be longer than max_size (a corpus file over -max_len): then no room to reckon with */
	n = size > 1 && size <= max_size ? walk(f, size - 1, at) : 0;
	if (!n || seed % 4 == 0)
		return LLVMFuzzerMutate(data, size, max_size);
	seed /= 4;
	off = at[seed % n];
	seed /= (unsigned int)n;
	memcpy(&c, f + off, CH);
	tail_off = off + CH + c.len;
	tail_len = size - 1 - tail_off;
	switch (seed % 8) {
	case 0: /* the chunk again after itself (a copy, or `cat A A` in small) */
		if (size + CH + c.len > max_size)
			return size;
		memmove(f + tail_off + CH + c.len, f + tail_off, tail_len);
		memcpy(f + tail_off, f + off, CH + c.len);
		return size + CH + c.len;
	case 1: /* the chunk removed */
		memmove(f + off, f + tail_off, tail_len);
		return size - CH - c.len;
	case 2: /* its header's fields other than the magic, length and CRC */
		LLVMFuzzerMutate(f + off + 4, CH - 12, CH - 12);
		fix_crc(f + off);
		return size;
	default: /* its payload, growing or shrinking it */
		room = max_size - (size - c.len);
		tail = malloc(tail_len + 1);
		if (!tail)
			return size;
		memcpy(tail, f + tail_off, tail_len);
		len = LLVMFuzzerMutate(f + off + CH, c.len, room);
		memcpy(f + off + CH + len, tail, tail_len);
		free(tail);
		c.len = (uint32_t)len;
		memcpy(f + off, &c, CH);
		fix_crc(f + off);
		return size - (tail_off - off - CH) + len;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *null;
	struct ks_recording rec;
	uint8_t *p;
	char path[64];
	int fd;

	if (!size)
		return 0;
	if (!null) {
		null = fopen("/dev/null", "w");
		ks_json = false;
	}
	p = malloc(size);
	if (!p)
		return 0;
	memcpy(p, data + 1, size - 1);
	if (data[0] & 1)
		fix_crcs(p, size - 1);
	fd = memfd_create("ks-fuzz", MFD_CLOEXEC);
	if (fd < 0 || write(fd, p, size - 1) != (ssize_t)(size - 1))
		abort();
	free(p);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (!ks_recording_load(&rec, path)) {
		ks_trace_write(&rec, KS_TRACE_TEXT, 0, null);
		ks_trace_write(&rec, KS_TRACE_JSON, 0, null);
		ks_trace_write(&rec, KS_TRACE_CSV, 0, null);
		ks_trace_write_perfetto(&rec, 0, null);
		/* fields every event has: never an error, so the filter runs on every event */
		ks_recording_filter(&rec, "cpu < 2 || comm ~ \"*a?\"");
		ks_trace_write(&rec, KS_TRACE_TEXT, 0, null);
		ks_recording_free(&rec);
	}
	close(fd);
	return 0;
}
