/* A real recording (the fuzz seed, two events with formats) decoded after a cut at every offset of its first chunks and many later ones, and after random byte flips: it opens, never returns a damaged or invented event. */
#include <fcntl.h>
#include <sys/mman.h>
#include "format/recording.h"
#include "output/trace.h"
#include "test.h"

#define SEED "tests/fuzz/corpus/recfile/seed2" /* one mode byte for the fuzzer, then the file */

static unsigned char *orig;
static size_t size;
static char path[64];
static int memfd = -1;

static bool read_seed(void)
{
	FILE *f = fopen(SEED, "rb");
	long n;

	if (!f)
		return false;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 1, SEEK_SET);
	orig = malloc((size_t)n);
	size = orig ? fread(orig, 1, (size_t)n - 1, f) : 0;
	fclose(f);
	/* in memory: thousands of versions of the file, no disk */
	memfd = memfd_create("ks-test-reccut", MFD_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
	return size > 0 && memfd >= 0;
}

static void write_file(const unsigned char *p, size_t n)
{
	if (ftruncate(memfd, 0) || pwrite(memfd, p, n, 0) != (ssize_t)n)
		abort();
}

/* True when the event @x is, byte for byte, one of the intact file's. */
static bool known(const struct ks_recording *full, const struct ks_rec_ev *x)
{
	for (size_t i = 0; i < full->nev; i++) {
		const struct ks_rec_event *e = full->evs[i].e;

		if (e->ts == x->e->ts && e->len == x->e->len && !memcmp(e, x->e, sizeof(*e) + e->len))
			return true;
	}
	return false;
}

TEST(cut_at_every_offset)
{
	struct ks_recording full, r;
	FILE *null = fopen("/dev/null", "w");
	size_t prev = 0;
	int checked = 0;

	ASSERT_TRUE(read_seed());
	write_file(orig, size);
	ASSERT_EQ_INT(ks_recording_load(&full, path), 0);
	ASSERT_TRUE(full.nev > 0);
	ASSERT_EQ_U64(full.rd.cut_bytes, 0);
	for (size_t cut = 0; cut <= size; cut += cut < 3000 ? 1 : 7) {
		int err;

		write_file(orig, cut);
		err = ks_recording_load(&r, path);
		if (cut < sizeof(struct ks_rec_header)) {
			EXPECT_EQ_INT(err, -EBADMSG);
			continue;
		}
		if (!EXPECT_EQ_INT(err, 0))
			break;
		/* whole chunks only, more of them the longer the file, each event intact */
		EXPECT_TRUE(r.nev >= prev && r.nev <= full.nev);
		EXPECT_TRUE(r.rd.cut_bytes <= cut);
		EXPECT_EQ_U64(r.bad_events, 0);
		for (size_t i = 0; i < r.nev; i++)
			EXPECT_TRUE(known(&full, &r.evs[i]));
		ks_trace_write(&r, KS_TRACE_TEXT, 0, null);
		prev = r.nev;
		ks_recording_free(&r);
		checked++;
	}
	EXPECT_EQ_U64(prev, full.nev);
	EXPECT_TRUE(checked > 3000);
	ks_recording_free(&full);
	fclose(null);
}

TEST(random_byte_flips)
{
	struct ks_recording full, r;
	unsigned char *p;
	unsigned seed = 12345;
	int damaged = 0;

	ASSERT_TRUE(orig || read_seed());
	write_file(orig, size);
	ASSERT_EQ_INT(ks_recording_load(&full, path), 0);
	p = malloc(size);
	ASSERT_TRUE(p != NULL);
	for (int round = 0; round < 1500; round++) {
		int nflips = 1 + round % 4, err;

		memcpy(p, orig, size);
		for (int k = 0; k < nflips; k++) {
			seed = seed * 1103515245u + 12345u;
			p[(seed >> 8) % size] ^= (unsigned char)(1u << ((seed >> 4) % 8));
		}
		write_file(p, size);
		err = ks_recording_load(&r, path);
		if (err) {
			/* only a damaged file header refuses the file */
			EXPECT_TRUE(err == -EBADMSG || err == -EPROTO);
			continue;
		}
		damaged += r.rd.bad_chunks > 0;
		EXPECT_TRUE(r.nev <= full.nev);
		for (size_t i = 0; i < r.nev; i++)
			EXPECT_TRUE(known(&full, &r.evs[i]));
		ks_recording_free(&r);
	}
	/* nearly every flip lands in a CRC-covered chunk, which is then reported */
	EXPECT_TRUE(damaged > 1000);
	free(p);
	ks_recording_free(&full);
}
