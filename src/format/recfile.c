/* The recording file: CRC32C, the append-only writer, and the reader that survives cut and damaged files. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include "core/file.h"
#include "format/recfile.h"

/* Castagnoli polynomial, reflected; the table is built on first use (8 KiB of code saved). */
static uint32_t crc_table[256];
static bool crc_ready;

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1)));
		crc_table[i] = c;
	}
	crc_ready = true;
}

#if defined(__x86_64__)
#include <nmmintrin.h>

/*
 * SSE4.2's crc32 instruction computes this very CRC (Castagnoli, reflected), 8
 * bytes at a time: the byte table took 70% of the recorder's CPU (perf
 * cpu-clock, a 2-thread getppid storm at 630k events/s), every chunk's
 * payload passing through it.
 */
__attribute__((target("sse4.2"))) static uint32_t crc_sse42(uint32_t crc, const uint8_t *p, size_t len)
{
	uint64_t c = crc;

	for (; len && ((uintptr_t)p & 7); len--)
		c = _mm_crc32_u8((uint32_t)c, *p++);
	for (; len >= 8; len -= 8, p += 8) {
		uint64_t v;

		memcpy(&v, p, sizeof(v));
		c = _mm_crc32_u64(c, v);
	}
	for (; len; len--)
		c = _mm_crc32_u8((uint32_t)c, *p++);
	return (uint32_t)c;
}
#endif

uint32_t ks_crc32c(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

#if defined(__x86_64__)
	static int hw = -1;

	if (hw < 0)
		hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
	if (hw)
		return ~crc_sse42(~crc, p, len);
#endif
	if (!crc_ready)
		crc_init();
	crc = ~crc;
	while (len--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

static uint32_t chunk_crc(const struct ks_rec_chunk *c, const void *payload)
{
	struct ks_rec_chunk h = *c;

	h.crc = 0;
	return ks_crc32c(ks_crc32c(0, &h, sizeof(h)), payload, h.len);
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int ks_rec_create(struct ks_rec_writer *w, const char *path)
{
	struct ks_rec_header h = { .version = KS_REC_VERSION, .endian = KS_REC_ENDIAN };
	struct timespec ts;
	int err;

	memset(w, 0, sizeof(*w));
	/* a recording holds comms and pids: 0600 always, an existing file's mode included */
	w->fd = ks_file_create(path, KS_FILE_TRUNC, NULL);
	if (w->fd < 0)
		return w->fd;
	memcpy(h.magic, KS_REC_MAGIC, 8);
	h.header_size = sizeof(h);
	h.chunk_size = sizeof(struct ks_rec_chunk);
	h.event_size = sizeof(struct ks_rec_event);
	clock_gettime(CLOCK_REALTIME, &ts);
	h.created_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	err = write_all(w->fd, &h, sizeof(h));
	if (err) {
		close(w->fd);
		return err;
	}
	w->bytes = sizeof(h);
	return 0;
}

int ks_rec_append(struct ks_rec_writer *w, struct ks_rec_chunk *c, const void *payload, uint32_t len)
{
	char *buf;
	int err;

	c->magic = KS_REC_CHUNK_MAGIC;
	c->seq = w->seq;
	c->len = len;
	c->crc = chunk_crc(c, payload);
	/* one write: a crash leaves a whole chunk or a cut one, never a header without its data */
	buf = malloc(sizeof(*c) + len);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, c, sizeof(*c));
	if (len)
		memcpy(buf + sizeof(*c), payload, len);
	err = write_all(w->fd, buf, sizeof(*c) + len);
	free(buf);
	if (err)
		return err;
	w->seq++;
	w->bytes += sizeof(*c) + len;
	return 0;
}

int ks_rec_close(struct ks_rec_writer *w)
{
	int err = 0;

	if (w->fd >= 0 && close(w->fd) < 0)
		err = -errno;
	w->fd = -1;
	return err;
}

/* Escapes tab, newline and backslash so that a value stays on its line. */
static void kv_put(struct ks_rec_kv *kv, const char *s, bool escape)
{
	for (; *s; s++) {
		char e = 0;

		if (escape)
			e = *s == '\t' ? 't' : *s == '\n' ? 'n' : *s == '\\' ? '\\' : 0;
		if (kv->len + 3 > kv->cap) {
			size_t cap = kv->cap ? kv->cap * 2 : 1024;
			char *n = realloc(kv->buf, cap);

			if (!n) {
				kv->err = -ENOMEM;
				return;
			}
			kv->buf = n;
			kv->cap = cap;
		}
		if (e) {
			kv->buf[kv->len++] = '\\';
			kv->buf[kv->len++] = e;
		} else {
			kv->buf[kv->len++] = *s;
		}
	}
}

void ks_rec_kv_add(struct ks_rec_kv *kv, const char *key, const char *fmt, ...)
{
	char *val;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&val, fmt, ap);
	va_end(ap);
	if (n < 0) {
		kv->err = -ENOMEM;
		return;
	}
	kv_put(kv, key, true);
	kv_put(kv, "\t", false);
	kv_put(kv, val, true);
	kv_put(kv, "\n", false);
	free(val);
}

void ks_rec_kv_free(struct ks_rec_kv *kv)
{
	free(kv->buf);
	memset(kv, 0, sizeof(*kv));
}

void ks_rec_kv_each(const char *text, size_t len, void (*fn)(void *ctx, const char *key, const char *val),
		    void *ctx)
{
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *tab;
		char *line, *o;

		if (!nl)
			nl = end;
		tab = memchr(p, '\t', (size_t)(nl - p));
		line = malloc((size_t)(nl - p) + 2);
		if (!line)
			return;
		o = line;
		for (const char *q = p; q < nl; q++) {
			if (q == tab) {
				*o++ = '\0';
				continue;
			}
			if (*q == '\\' && q + 1 < nl) {
				q++;
				*o++ = *q == 't' ? '\t' : *q == 'n' ? '\n' : *q;
			} else {
				*o++ = *q;
			}
		}
		*o = '\0';
		if (tab)
			fn(ctx, line, line + strlen(line) + 1);
		free(line);
		p = nl + 1;
	}
}

struct kv_find {
	const char *key;
	char *out;
	size_t outlen;
	bool found;
};

static void kv_find_one(void *ctx, const char *key, const char *val)
{
	struct kv_find *f = ctx;

	if (!f->found && !strcmp(key, f->key)) {
		snprintf(f->out, f->outlen, "%s", val);
		f->found = true;
	}
}

bool ks_rec_kv_get(const char *text, size_t len, const char *key, char *out, size_t outlen)
{
	struct kv_find f = { key, out, outlen, false };

	if (outlen)
		out[0] = '\0';
	ks_rec_kv_each(text, len, kv_find_one, &f);
	return f.found;
}

static int pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	char *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -ENODATA;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

static int add_chunk(struct ks_rec_reader *r, const struct ks_rec_chunk *c, uint64_t off)
{
	if (r->nchunks == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 64;
		struct ks_rec_chunkref *n = realloc(r->chunks, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		r->chunks = n;
		r->cap = cap;
	}
	r->chunks[r->nchunks].hdr = *c;
	r->chunks[r->nchunks].off = off;
	r->nchunks++;
	return 0;
}

/* The next offset > @off where a chunk magic starts, or @r->size. */
static uint64_t resync(const struct ks_rec_reader *r, uint64_t off)
{
	uint32_t magic = KS_REC_CHUNK_MAGIC;
	char buf[4096 + 3];

	for (off++; off + 4 <= r->size;) {
		size_t n = r->size - off < sizeof(buf) ? (size_t)(r->size - off) : sizeof(buf);

		if (pread_all(r->fd, buf, n, off))
			break;
		for (size_t i = 0; i + 4 <= n; i++)
			if (!memcmp(buf + i, &magic, 4))
				return off + i;
		off += n - 3;
	}
	return r->size;
}

/* Validates the chunk at @off: 1 when intact (*@c filled), 0 when damaged, -ENODATA when cut. */
static int check_chunk(struct ks_rec_reader *r, uint64_t off, struct ks_rec_chunk *c, void **payload)
{
	void *p;
	int err;

	*payload = NULL;
	if (off + sizeof(*c) > r->size)
		return -ENODATA;
	err = pread_all(r->fd, c, sizeof(*c), off);
	if (err)
		return err;
	/* a type past KS_REC_TYPE_MAX (a newer ksight's) is kept when its CRC holds: every reader skips types it does not know */
	if (c->magic != KS_REC_CHUNK_MAGIC || c->type == 0 || c->type > KS_REC_TYPE_LIMIT ||
	    c->len > KS_REC_MAX_PAYLOAD)
		return 0;
	if (off + sizeof(*c) + c->len > r->size)
		return -ENODATA;
	p = malloc(c->len ? c->len : 1);
	if (!p)
		return -ENOMEM;
	err = pread_all(r->fd, p, c->len, off + sizeof(*c));
	if (err) {
		free(p);
		return err;
	}
	if (chunk_crc(c, p) != c->crc) {
		free(p);
		return 0;
	}
	*payload = p;
	return 1;
}

struct seqref {
	uint64_t seq;
	size_t i;
};

static int cmp_seqref(const void *a, const void *b)
{
	const struct seqref *x = a, *y = b;

	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return (x->i > y->i) - (x->i < y->i);
}

/*
 * Sequence numbers run 0, 1, 2... over a file: the ones missing are
 * chunks lost (damaged, or cut out), the ones seen twice chunks repeated
 * (a file concatenated to itself, a copy gone wrong).  A repeat that is an
 * exact copy of the chunk first seen with its number (same type, length
 * and CRC) is left out, so that its events are not shown twice.
 */
static int check_seqs(struct ks_rec_reader *r)
{
	struct seqref *v = malloc((r->nchunks + 1) * sizeof(*v));
	bool *drop = calloc(r->nchunks + 1, sizeof(*drop));
	size_t n = 0, first = 0;
	int err = 0;

	if (!v || !drop) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < r->nchunks; i++)
		v[i] = (struct seqref){ r->chunks[i].hdr.seq, i };
	qsort(v, r->nchunks, sizeof(*v), cmp_seqref);
	for (size_t k = 0; k < r->nchunks; k++) {
		const struct ks_rec_chunk *a = &r->chunks[first].hdr, *b = &r->chunks[v[k].i].hdr;

		if (k && v[k].seq == v[k - 1].seq) {
			r->seq_repeats++;
			if (a->type == b->type && a->len == b->len && a->crc == b->crc) {
				drop[v[k].i] = true;
				r->repeats_dropped++;
			}
			continue;
		}
		r->seq_gaps += v[k].seq - (k ? v[k - 1].seq + 1 : 0);
		first = v[k].i;
	}
	for (size_t i = 0; i < r->nchunks; i++)
		if (!drop[i])
			r->chunks[n++] = r->chunks[i];
	r->nchunks = n;
cleanup:
	free(v);
	free(drop);
	return err;
}

int ks_rec_open_fd(struct ks_rec_reader *r, int fd)
{
	uint64_t off;
	struct stat st;
	int err;

	memset(r, 0, sizeof(*r));
	r->fd = fd;
	if (fstat(fd, &st) < 0)
		return -errno;
	r->size = (uint64_t)st.st_size;
	if (r->size < sizeof(r->hdr) || pread_all(fd, &r->hdr, sizeof(r->hdr), 0) ||
	    memcmp(r->hdr.magic, KS_REC_MAGIC, 8))
		return -EBADMSG;
	if (r->hdr.version != KS_REC_VERSION || r->hdr.endian != KS_REC_ENDIAN ||
	    r->hdr.header_size != sizeof(r->hdr) || r->hdr.chunk_size != sizeof(struct ks_rec_chunk) ||
	    r->hdr.event_size != sizeof(struct ks_rec_event))
		return -EPROTO;
	for (off = sizeof(r->hdr); off < r->size;) {
		struct ks_rec_chunk c;
		void *p;
		int ok = check_chunk(r, off, &c, &p);

		if (ok == -ENODATA) {
			/* cut in this chunk; a later magic means damage in its header rather than the end */
			uint64_t next = resync(r, off);

			if (next == r->size) {
				r->cut_bytes = r->size - off;
				break;
			}
			r->bad_bytes += next - off;
			off = next;
			continue;
		}
		if (ok < 0)
			return ok;
		if (ok == 0) {
			/* scan on from the next byte: a damaged length must not decide where the next chunk is */
			uint64_t next = resync(r, off);

			if (c.magic == KS_REC_CHUNK_MAGIC)
				r->bad_chunks++;
			r->bad_bytes += next - off;
			off = next;
			continue;
		}
		free(p);
		err = add_chunk(r, &c, off + sizeof(c));
		if (err)
			return err;
		off += sizeof(c) + c.len;
	}
	return check_seqs(r);
}

int ks_rec_open(struct ks_rec_reader *r, const char *path)
{
	/* O_NONBLOCK: open(2) of a FIFO waits for a writer; fstat then refuses it */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), err;
	struct stat st;

	memset(r, 0, sizeof(*r));
	r->fd = -1;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		err = -errno;
	else
		err = S_ISREG(st.st_mode) ? 0 : S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	if (err) {
		close(fd);
		return err;
	}
	err = ks_rec_open_fd(r, fd);
	if (err)
		ks_rec_free(r);
	return err;
}

const char *ks_rec_strerror(int err)
{
	return err == -EINVAL ? "not a regular file" : strerror(-err);
}

int ks_rec_read(const struct ks_rec_reader *r, size_t i, void **buf)
{
	const struct ks_rec_chunkref *c = &r->chunks[i];
	void *p = malloc(c->hdr.len + 1);
	int err;

	if (!p)
		return -ENOMEM;
	err = pread_all(r->fd, p, c->hdr.len, c->off);
	if (!err && chunk_crc(&c->hdr, p) != c->hdr.crc)
		err = -EBADMSG; /* changed under us since the scan */
	if (err) {
		free(p);
		return err;
	}
	((char *)p)[c->hdr.len] = '\0'; /* text payloads are usable as strings */
	*buf = p;
	return 0;
}

void ks_rec_free(struct ks_rec_reader *r)
{
	if (r->fd >= 0)
		close(r->fd);
	free(r->chunks);
	memset(r, 0, sizeof(*r));
	r->fd = -1;
}

const struct ks_rec_event *ks_rec_next_event(const void *payload, uint32_t len, uint32_t *off)
{
	const struct ks_rec_event *e;
	uint32_t stride;

	if (*off >= len || len - *off < sizeof(*e))
		return NULL;
	e = (const struct ks_rec_event *)((const char *)payload + *off);
	stride = ks_rec_ev_stride(e->len);
	if (stride > len - *off)
		return NULL;
	*off += stride;
	return e;
}

int ks_rec_deflated_append(struct ks_rec_writer *w, struct ks_rec_chunk *c, uint32_t type, const char *head,
			   size_t head_len, struct ks_rec_kv *kv, const void *body, size_t body_len)
{
	uLongf zlen = compressBound((uLong)body_len);
	unsigned char *z = NULL;
	char *p = NULL;
	size_t len;
	int err = -EFBIG;

	if (body_len > KS_REC_MAX_PAYLOAD)
		goto cleanup;
	err = -ENOMEM;
	z = malloc(zlen);
	if (!z)
		goto cleanup;
	err = -EINVAL;
	if (compress2(z, &zlen, body_len ? (const Bytef *)body : (const Bytef *)"", (uLong)body_len, 6) != Z_OK)
		goto cleanup;
	ks_rec_kv_add(kv, "zlib_len", "%lu", (unsigned long)zlen);
	err = kv->err;
	if (err)
		goto cleanup;
	len = head_len + kv->len + 1 + zlen;
	err = -EFBIG;
	if (len > KS_REC_MAX_PAYLOAD)
		goto cleanup;
	err = -ENOMEM;
	p = malloc(len);
	if (!p)
		goto cleanup;
	/* the lines, the empty line that ends them, then the body deflated */
	memcpy(p, head, head_len);
	memcpy(p + head_len, kv->buf, kv->len);
	p[head_len + kv->len] = '\n';
	memcpy(p + head_len + kv->len + 1, z, zlen);
	c->type = type;
	err = ks_rec_append(w, c, p, (uint32_t)len);
cleanup:
	free(p);
	free(z);
	return err;
}

int ks_rec_report_append(struct ks_rec_writer *w, struct ks_rec_chunk *c, const char *head, size_t head_len,
			 const char *json, size_t json_len, const char *text, size_t text_len)
{
	struct ks_rec_kv kv = { 0 };
	size_t raw = json_len + text_len;
	char *body;
	int err = -EFBIG;

	if (raw > KS_REC_MAX_PAYLOAD)
		return err;
	/* the renderings deflated: a report's JSON is mostly histogram buckets (58 KiB of syscalls' in 14 KiB) */
	body = malloc(raw ? raw : 1);
	if (!body)
		return -ENOMEM;
	memcpy(body, json, json_len);
	memcpy(body + json_len, text, text_len);
	ks_rec_kv_add(&kv, "json_len", "%zu", json_len);
	ks_rec_kv_add(&kv, "text_len", "%zu", text_len);
	err = ks_rec_deflated_append(w, c, KS_REC_REPORT, head, head_len, &kv, body, raw);
	free(body);
	ks_rec_kv_free(&kv);
	return err;
}
