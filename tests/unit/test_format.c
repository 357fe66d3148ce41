/* The recording file: round trip, a cut at every offset of the first chunks, flipped bytes, manifest escaping. */
#include <fcntl.h>
#include <sys/stat.h>
#include "format/recfile.h"
#include "test.h"

#define NCHUNKS 6
#define PER_CHUNK 5

static char path[64];

/* Writes a manifest, one format and NCHUNKS event chunks; returns the end offset of each chunk. */
static void make_file(uint64_t *ends)
{
	struct ks_rec_writer w;
	struct ks_rec_chunk c = { .type = KS_REC_MANIFEST };
	struct ks_rec_kv kv = { 0 };
	char buf[PER_CHUNK * 64];
	int n = 0;

	snprintf(path, sizeof(path), "/tmp/ks-test-format.%d", (int)getpid());
	ASSERT_EQ_INT(ks_rec_create(&w, path), 0);
	ks_rec_kv_add(&kv, "cmdline", "ksight record -e 'a\tb'\n\\");
	ks_rec_kv_add(&kv, "host", "%s", "box");
	ASSERT_EQ_INT(kv.err, 0);
	ASSERT_EQ_INT(ks_rec_append(&w, &c, kv.buf, (uint32_t)kv.len), 0);
	ends[n++] = w.bytes;
	ks_rec_kv_free(&kv);
	c = (struct ks_rec_chunk){ .type = KS_REC_FORMAT };
	ASSERT_EQ_INT(ks_rec_append(&w, &c, "sys\0name: x\nID: 7\n", 19), 0);
	ends[n++] = w.bytes;
	for (int k = 0; k < NCHUNKS; k++) {
		uint32_t off = 0;

		memset(buf, 0, sizeof(buf));
		for (int i = 0; i < PER_CHUNK; i++) {
			struct ks_rec_event *e = (void *)(buf + off);

			e->ts = (uint64_t)(k * PER_CHUNK + i) * 1000;
			e->tgid = 42;
			e->len = (uint16_t)(i + 1); /* odd lengths: padding */
			memset(e + 1, 'a' + i, e->len);
			off += ks_rec_ev_stride(e->len);
		}
		c = (struct ks_rec_chunk){ .type = KS_REC_EVENTS, .cpu = (uint32_t)k % 2, .count = PER_CHUNK,
					   .first_ts = (uint64_t)k * PER_CHUNK * 1000, .lost = (uint64_t)k };
		ASSERT_EQ_INT(ks_rec_append(&w, &c, buf, off), 0);
		ends[n++] = w.bytes;
	}
	ASSERT_EQ_INT(ks_rec_close(&w), 0);
}

/* Counts the events of every intact events chunk, checking each event's content. */
static int count_events(struct ks_rec_reader *r, int *bad)
{
	int n = 0;

	for (size_t i = 0; i < r->nchunks; i++) {
		const struct ks_rec_event *e;
		uint32_t off = 0;
		void *p;

		if (r->chunks[i].hdr.type != KS_REC_EVENTS)
			continue;
		if (ks_rec_read(r, i, &p)) {
			(*bad)++;
			continue;
		}
		while ((e = ks_rec_next_event(p, r->chunks[i].hdr.len, &off))) {
			const char *d = (const char *)(e + 1);

			if (e->tgid != 42 || e->len < 1 || e->len > PER_CHUNK || d[0] != 'a' + e->len - 1)
				(*bad)++;
			n++;
		}
		if (off != r->chunks[i].hdr.len)
			(*bad)++;
		free(p);
	}
	return n;
}

TEST(roundtrip)
{
	struct ks_rec_reader r;
	uint64_t ends[NCHUNKS + 2];
	struct stat st;
	char v[128];
	void *p;
	int bad = 0;

	make_file(ends);
	ASSERT_EQ_INT(stat(path, &st), 0);
	EXPECT_EQ_U64(st.st_mode & 0777, 0600);
	ASSERT_EQ_INT(ks_rec_open(&r, path), 0);
	EXPECT_EQ_U64(r.nchunks, NCHUNKS + 2);
	EXPECT_EQ_U64(r.cut_bytes + r.bad_bytes + r.bad_chunks + r.seq_gaps, 0);
	EXPECT_EQ_INT(count_events(&r, &bad), NCHUNKS * PER_CHUNK);
	EXPECT_EQ_INT(bad, 0);
	ASSERT_EQ_INT(ks_rec_read(&r, 0, &p), 0);
	EXPECT_TRUE(ks_rec_kv_get(p, r.chunks[0].hdr.len, "cmdline", v, sizeof(v)));
	EXPECT_EQ_STR(v, "ksight record -e 'a\tb'\n\\");
	EXPECT_TRUE(ks_rec_kv_get(p, r.chunks[0].hdr.len, "host", v, sizeof(v)));
	EXPECT_EQ_STR(v, "box");
	EXPECT_TRUE(!ks_rec_kv_get(p, r.chunks[0].hdr.len, "nope", v, sizeof(v)));
	free(p);
	EXPECT_EQ_U64(r.chunks[5].hdr.lost, 3);
	ks_rec_free(&r);
	unlink(path);
}

/* A file cut at any byte opens (once the header is whole) and yields exactly the chunks before the cut. */
TEST(cut_everywhere)
{
	uint64_t ends[NCHUNKS + 2];
	int fails = 0;

	make_file(ends);
	for (uint64_t cut = 0; cut <= ends[NCHUNKS + 1] && !fails; cut++) {
		struct ks_rec_reader r;
		size_t whole = 0;
		int bad = 0, err, n;

		ASSERT_EQ_INT(truncate(path, (off_t)ends[NCHUNKS + 1]), 0);
		make_file(ends);
		ASSERT_EQ_INT(truncate(path, (off_t)cut), 0);
		err = ks_rec_open(&r, path);
		if (cut < sizeof(struct ks_rec_header)) {
			fails += !EXPECT_EQ_INT(err, -EBADMSG);
			continue;
		}
		ASSERT_EQ_INT(err, 0);
		while (whole < NCHUNKS + 2 && ends[whole] <= cut)
			whole++;
		fails += !EXPECT_EQ_U64(r.nchunks, whole);
		n = count_events(&r, &bad);
		fails += !EXPECT_EQ_INT(n, (whole > 2 ? (int)whole - 2 : 0) * PER_CHUNK);
		fails += !EXPECT_EQ_INT(bad, 0);
		/* what is not in a chunk is said to be cut (or damage, when a magic turns up inside the rest) */
		fails += !EXPECT_EQ_U64(r.cut_bytes + r.bad_bytes, cut - (whole ? ends[whole - 1] : sizeof(struct ks_rec_header)));
		ks_rec_free(&r);
	}
	unlink(path);
}

/* One flipped byte anywhere after the header costs at most the chunk it is in, and is reported. */
TEST(flip_bytes)
{
	uint64_t ends[NCHUNKS + 2];
	unsigned int seed = 12345;
	int fails = 0;

	make_file(ends);
	for (uint64_t pos = sizeof(struct ks_rec_header); pos < ends[NCHUNKS + 1] && !fails; pos++) {
		struct ks_rec_reader r;
		unsigned char b;
		int fd, bad = 0;

		make_file(ends);
		fd = open(path, O_RDWR);
		ASSERT_TRUE(fd >= 0);
		ASSERT_EQ_INT(pread(fd, &b, 1, (off_t)pos), 1);
		b ^= (unsigned char)(1u << (rand_r(&seed) % 8));
		ASSERT_EQ_INT(pwrite(fd, &b, 1, (off_t)pos), 1);
		close(fd);
		ASSERT_EQ_INT(ks_rec_open(&r, path), 0);
		fails += !EXPECT_EQ_U64(r.nchunks, NCHUNKS + 1);
		/* a damaged length of the last chunk looks like a cut: reported as such */
		fails += !EXPECT_TRUE(r.bad_chunks + r.bad_bytes + r.cut_bytes > 0);
		count_events(&r, &bad);
		fails += !EXPECT_EQ_INT(bad, 0);
		ks_rec_free(&r);
	}
	unlink(path);
}

TEST(bad_header)
{
	struct ks_rec_reader r;
	uint64_t ends[NCHUNKS + 2];
	uint32_t v = 99;
	int fd;

	make_file(ends);
	fd = open(path, O_RDWR);
	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ_INT(pwrite(fd, &v, 4, 8), 4); /* version */
	close(fd);
	EXPECT_EQ_INT(ks_rec_open(&r, path), -EPROTO);
	EXPECT_EQ_INT(ks_rec_open(&r, "/nonexistent/ks"), -ENOENT);
	unlink(path);
}

TEST(crc32c_vector)
{
	/* the standard check value of CRC-32C */
	EXPECT_EQ_U64(ks_crc32c(0, "123456789", 9), 0xe3069283);
}

TEST(crc32c_rfc3720_any_alignment)
{
	/* RFC 3720 B.4's 32-byte vectors, from each start within 8 bytes and cut in two
	 * calls: the 8-byte (SSE4.2) path, its unaligned head and its tail */
	static const uint32_t want[4] = { 0x8a9136aa, 0x62a8ab43, 0x46dd794e, 0x113fdb5c };
	uint8_t buf[4][32 + 8];

	for (int v = 0; v < 4; v++) {
		for (int off = 0; off < 8; off++) {
			uint8_t *p = buf[v] + off;

			for (int i = 0; i < 32; i++)
				p[i] = v == 0 ? 0 : v == 1 ? 0xff : v == 2 ? (uint8_t)i : (uint8_t)(31 - i);
			EXPECT_EQ_U64(ks_crc32c(0, p, 32), want[v]);
			EXPECT_EQ_U64(ks_crc32c(ks_crc32c(0, p, 13), p + 13, 19), want[v]);
		}
	}
}
