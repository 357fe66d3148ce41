/* The recording file (ksight record): layout, writer and reader; plain C and POSIX, no libbpf, no root. */
#ifndef KS_FORMAT_RECFILE_H
#define KS_FORMAT_RECFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ksight/record.h"

/*
 * A file is a fixed header, then chunks.  Every chunk (manifest, event
 * formats, events, trailer) has the same header and a CRC32C over header
 * and payload, so one reader loop validates all of it, and a file cut at
 * any byte loses at most the chunk being written.  Chunks are appended
 * with one write(2) each.  Integers are in the writer's byte order, which
 * the header states (a reader on the other order refuses the file).
 */
#define KS_REC_MAGIC "KSIGHTRC"
#define KS_REC_VERSION 1
#define KS_REC_ENDIAN 0x01020304u
#define KS_REC_CHUNK_MAGIC 0x4b43484bu /* "KHCK" in little endian */

struct ks_rec_header {
	char magic[8];
	uint32_t version;
	uint32_t endian;     /* KS_REC_ENDIAN as written by the writer */
	uint16_t header_size; /* sizeof(struct ks_rec_header) */
	uint16_t chunk_size;  /* sizeof(struct ks_rec_chunk) */
	uint16_t event_size;  /* sizeof(struct ks_rec_event) */
	uint16_t flags;
	uint64_t created_ns; /* CLOCK_REALTIME at creation */
	uint8_t reserved[32];
};

enum ks_rec_chunk_type {
	KS_REC_MANIFEST = 1, /* "key\tvalue\n" lines (values escaped: \t \n \\) */
	KS_REC_FORMAT = 2,   /* "system\0" then the tracefs format text of one event */
	KS_REC_EVENTS = 3,   /* struct ks_rec_event records (ksight/record.h) of one CPU, each padded to 8 bytes */
	KS_REC_TRAILER = 4,  /* "key\tvalue\n" lines written at the end: final loss totals */
	/*
	 * record --collect: one collector's report, for an interval (count = its
	 * number, first_ts/last_ts its window, lost its losses) or, at the end,
	 * the whole window (count 0): "key\tvalue\n" lines (collector, kind,
	 * json_len, text_len, zlib_len, own cost), an empty line, then its -j
	 * and its text renderings back to back, deflated (ks_rec_report_append;
	 * read back by ks_rec_report_inflate and ks_rec_report_check, format/fmtcheck.h)
	 */
	KS_REC_REPORT = 5,
	/*
	 * record --profile: the stacks of one interval, symbolised (count its
	 * number, first_ts/last_ts its window, lost, in the last one, the
	 * samples lost over the run): "key\tvalue\n"
	 * lines (version, sample type, counts, lengths), an empty line, then
	 * frames and stacks deflated (format/recstacks.h).  Readers before it
	 * count it as a damaged chunk and go on; readers since skip any type
	 * they do not know up to KS_REC_TYPE_LIMIT.
	 */
	KS_REC_STACKS = 6,
	KS_REC_TYPE_MAX = 6,
	/* types up to this are read as intact chunks (CRC checked) and skipped when unknown: room for later ones */
	KS_REC_TYPE_LIMIT = 255,
};

struct ks_rec_chunk {
	uint32_t magic; /* KS_REC_CHUNK_MAGIC: where a reader resynchronises after damage */
	uint32_t type;
	uint64_t seq;	/* 0, 1, 2... over the whole file */
	uint32_t cpu;	/* events: the CPU they happened on */
	uint32_t count; /* events in the payload */
	uint64_t first_ts, last_ts; /* CLOCK_MONOTONIC ns of the first and last event */
	uint64_t lost;	/* events of this CPU lost since its previous events chunk */
	uint32_t len;	/* payload bytes after this header */
	uint32_t crc;	/* CRC32C of this header (crc = 0) and the payload */
};

/* Largest payload a reader accepts: bigger lengths are damage. */
#define KS_REC_MAX_PAYLOAD (64u << 20)

static inline uint32_t ks_rec_ev_stride(uint32_t len)
{
	return (uint32_t)((sizeof(struct ks_rec_event) + len + 7) & ~7u);
}

/* CRC-32C of @buf continuing @crc (0 to start): the CPU's crc32c instruction where it has one (cpuid, once), else a table. */
uint32_t ks_crc32c(uint32_t crc, const void *buf, size_t len);
/* The two ways, for tests: the table; the instruction (the table where the CPU has none, ks_crc32c_has_hw false). */
uint32_t ks_crc32c_sw(uint32_t crc, const void *buf, size_t len);
uint32_t ks_crc32c_hw(uint32_t crc, const void *buf, size_t len);
bool ks_crc32c_has_hw(void);

/* Writer. */
struct ks_rec_writer {
	int fd;
	uint64_t seq;
	uint64_t bytes;
};

/* Creates @path mode 0600 (truncating it; a symlink is refused) and writes the header: 0 or -errno. */
int ks_rec_create(struct ks_rec_writer *w, const char *path);
/* Appends one chunk with one write; @c's magic, seq, len and crc are filled in. 0 or -errno. */
int ks_rec_append(struct ks_rec_writer *w, struct ks_rec_chunk *c, const void *payload, uint32_t len);
int ks_rec_close(struct ks_rec_writer *w);
/*
 * Appends a KS_REC_REPORT chunk (@c's type is set; its count, window and
 * lost are the caller's): @head's "key\tvalue\n" lines, json_len,
 * text_len and zlib_len, the empty line, then @json and @text back to back
 * deflated (zlib, zlib_len bytes).  0 or -errno (-EFBIG past
 * KS_REC_MAX_PAYLOAD, before or after deflating).
 */
int ks_rec_report_append(struct ks_rec_writer *w, struct ks_rec_chunk *c, const char *head, size_t head_len,
			 const char *json, size_t json_len, const char *text, size_t text_len);

/* Manifest lines: appends "key\tvalue\n" to a growing buffer. */
struct ks_rec_kv {
	char *buf;
	size_t len, cap;
	int err;
};
void ks_rec_kv_add(struct ks_rec_kv *kv, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void ks_rec_kv_free(struct ks_rec_kv *kv);

/*
 * Appends a chunk of type @type that reads as @head's lines, @kv's lines
 * and zlib_len, the empty line, then @body deflated (zlib, zlib_len
 * bytes): KS_REC_REPORT's and KS_REC_STACKS' shape.  0 or -errno
 * (-EFBIG past KS_REC_MAX_PAYLOAD, before or after deflating; @kv's
 * error when it has one).
 */
int ks_rec_deflated_append(struct ks_rec_writer *w, struct ks_rec_chunk *c, uint32_t type, const char *head,
			   size_t head_len, struct ks_rec_kv *kv, const void *body, size_t body_len);

/* Reader: scans the whole file once, keeping the intact chunks. */
struct ks_rec_chunkref {
	struct ks_rec_chunk hdr;
	uint64_t off; /* of the payload in the file */
};

struct ks_rec_reader {
	int fd;
	uint64_t size;
	struct ks_rec_header hdr;
	struct ks_rec_chunkref *chunks; /* intact chunks, in file order */
	size_t nchunks, cap;
	uint64_t bad_chunks;	/* CRC mismatches skipped */
	uint64_t bad_bytes;	/* bytes skipped while resynchronising */
	uint64_t cut_bytes;	/* bytes at the end that form no whole chunk (a cut file) */
	uint64_t seq_gaps;	/* chunks missing by sequence number (damaged ones among them) */
	uint64_t seq_repeats;	/* chunks whose sequence number an earlier chunk has */
	uint64_t repeats_dropped; /* of those, exact copies of that chunk: left out of @chunks */
};

/*
 * Opens and scans @path.  Other than a regular file is -EISDIR or -EINVAL
 * (a FIFO is refused without waiting for a writer).  A bad header is -EBADMSG (-EPROTO for a file of
 * another version or byte order); damage after it is counted, never fatal.
 */
int ks_rec_open(struct ks_rec_reader *r, const char *path);
/* What ks_rec_open's -errno @err means for a user: "not a regular file" for -EINVAL, else strerror. */
const char *ks_rec_strerror(int err);
/* The same over an open descriptor (taken over: closed by ks_rec_free). */
int ks_rec_open_fd(struct ks_rec_reader *r, int fd);
/* Reads chunk @i's payload into a malloc'd buffer (*@buf); 0 or -errno. */
int ks_rec_read(const struct ks_rec_reader *r, size_t i, void **buf);
void ks_rec_free(struct ks_rec_reader *r);

/*
 * Walks an events payload: *@off is the offset of the next event (start at 0).
 * Returns the event and advances *@off, or NULL at the end or on a record
 * that does not fit (then *@off is left at it: *@off < len means damage).
 */
const struct ks_rec_event *ks_rec_next_event(const void *payload, uint32_t len, uint32_t *off);

/*
 * Looks @key up in "key\tvalue\n" text and copies its value unescaped into
 * @out (@outlen bytes, always terminated).  True when found.
 */
bool ks_rec_kv_get(const char *text, size_t len, const char *key, char *out, size_t outlen);
/* Calls @fn for every line, value unescaped (in a buffer valid during the call). */
void ks_rec_kv_each(const char *text, size_t len, void (*fn)(void *ctx, const char *key, const char *val),
		    void *ctx);

#endif
