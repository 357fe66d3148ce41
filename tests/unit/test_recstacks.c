/* record --profile's stacks chunk: a stack model written and read back equal, a chunk cut or flipped at every byte refused (never a crash), and a chunk type this ksight does not know skipped as intact. */
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include "format/recstacks.h"
#include "test.h"

static char path[64];
static int memfd = -1;

static void fill(struct ks_stacks *st)
{
	const char *names[] = { "app", "main", "work", "hot_spin", "do_syscall_64" };
	const enum ks_frame_kind kinds[] = { KS_FK_COMM, KS_FK_USER, KS_FK_USER, KS_FK_USER, KS_FK_KERNEL };
	uint32_t id[5], a[4], b[5];

	ks_stacks_init(st, "samples", "count", 10101010);
	st->time_ns = 123;
	st->duration_ns = 2000000000;
	for (int i = 0; i < 5; i++)
		id[i] = (uint32_t)ks_stacks_frame(st, names[i], kinds[i]);
	memcpy(a, (uint32_t[]){ id[0], id[1], id[2], id[3] }, sizeof(a));
	memcpy(b, (uint32_t[]){ id[0], id[1], id[2], id[3], id[4] }, sizeof(b));
	ks_stacks_add(st, a, 4, 90);
	ks_stacks_add(st, b, 5, 7);
	ks_stacks_add(st, a, 2, 3);
}

/* A file of the header, a stacks chunk of @st and a chunk of type @other (0: none); its bytes in *@out. */
static size_t make(const struct ks_stacks *st, uint32_t other, unsigned char **out)
{
	struct ks_rec_writer w;
	struct ks_rec_chunk c = { .count = 0 };
	char tmp[] = "/tmp/ks-test-recstacks-XXXXXX";
	int fd = mkstemp(tmp);
	off_t n;

	close(fd);
	if (ks_rec_create(&w, tmp) || ks_rec_stacks_append(&w, &c, "profile.hz\t99\n", 14, st))
		abort();
	if (other) {
		struct ks_rec_chunk o = { .type = other };

		if (ks_rec_append(&w, &o, "later", 5))
			abort();
	}
	ks_rec_close(&w);
	fd = open(tmp, O_RDONLY);
	n = lseek(fd, 0, SEEK_END);
	*out = malloc((size_t)n);
	if (pread(fd, *out, (size_t)n, 0) != n)
		abort();
	close(fd);
	unlink(tmp);
	return (size_t)n;
}

static int load(const unsigned char *p, size_t n, struct ks_stacks *st, struct ks_rec_stacks_info *info,
		uint64_t *bad)
{
	struct ks_rec_reader r;
	int err;

	if (memfd < 0) {
		/* in memory: hundreds of versions of the file, no disk */
		memfd = memfd_create("ks-test-recstacks", MFD_CLOEXEC);
		snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
	}
	if (ftruncate(memfd, 0) || pwrite(memfd, p, n, 0) != (ssize_t)n)
		abort();
	err = ks_rec_open(&r, path);
	if (err)
		return err;
	*bad = r.bad_chunks;
	err = ks_rec_stacks_load(&r, st, info);
	ks_rec_free(&r);
	return err;
}

static void folded(const struct ks_stacks *st, char *buf, size_t len)
{
	FILE *f = fmemopen(buf, len, "w");

	ks_write_folded(st, f);
	fclose(f);
}

TEST(round_trip_and_unknown_type_skipped)
{
	struct ks_stacks st, back;
	struct ks_rec_stacks_info info;
	unsigned char *file;
	char a[512] = "", b[512] = "";
	uint64_t bad = 1;
	size_t n;

	fill(&st);
	n = make(&st, KS_REC_TYPE_MAX + 1, &file);
	ASSERT_EQ_INT(load(file, n, &back, &info, &bad), 0);
	EXPECT_EQ_U64(info.chunks, 1);
	EXPECT_EQ_U64(info.refused, 0);
	EXPECT_EQ_U64(bad, 0); /* the later type: intact, skipped */
	EXPECT_EQ_U64(back.total, 100);
	EXPECT_EQ_U64(back.n, 3);
	EXPECT_EQ_U64(back.period_ns, 10101010);
	EXPECT_EQ_U64(back.duration_ns, 2000000000);
	EXPECT_EQ_STR(back.sample_type, "samples");
	ks_stacks_sort(&st);
	ks_stacks_sort(&back);
	folded(&st, a, sizeof(a));
	folded(&back, b, sizeof(b));
	EXPECT_EQ_STR(b, a);
	EXPECT_TRUE(strstr(b, "app;main;work;hot_spin;do_syscall_64_[k] 7\n") != NULL);
	ks_stacks_free(&back);
	ks_stacks_free(&st);
	free(file);
}

TEST(cut_and_flipped_never_invent)
{
	struct ks_stacks st, back;
	struct ks_rec_stacks_info info;
	unsigned char *file;
	uint64_t bad;
	size_t n;

	fill(&st);
	n = make(&st, 0, &file);
	/* cut at every byte: the stacks whole or not at all */
	for (size_t at = 64; at < n; at++) {
		int err = load(file, at, &back, &info, &bad);

		if (err == 0) {
			EXPECT_EQ_U64(info.chunks, 0);
			EXPECT_EQ_U64(back.total, 0);
			ks_stacks_free(&back);
		}
	}
	/* a byte flipped anywhere in the chunk: the CRC catches it (damage), or the stacks are the same */
	for (size_t at = 64; at < n; at++) {
		file[at] ^= 0x41;
		if (!load(file, n, &back, &info, &bad)) {
			EXPECT_TRUE(info.chunks == 0 || back.total == 100);
			ks_stacks_free(&back);
		}
		file[at] ^= 0x41;
	}
	ks_stacks_free(&st);
	free(file);
}

/* The parser alone on payloads with the CRC out of the way: every edit of the lines and every cut of the body refused in one line. */
TEST(parse_refuses_edits)
{
	struct ks_stacks st, back;
	struct ks_rec_chunk *c;
	unsigned char *file;
	char why[160];
	size_t n;
	bool inited;

	fill(&st);
	n = make(&st, 0, &file);
	c = (struct ks_rec_chunk *)(file + 64);
	ASSERT_TRUE(64 + sizeof(*c) + c->len <= n);
	for (uint32_t len = 0; len < c->len; len++) {
		inited = false;
		why[0] = 0;
		int err = ks_rec_stacks_parse((const char *)(c + 1), len, &back, &inited, why, sizeof(why));

		EXPECT_TRUE(err == -EBADMSG && why[0] && !inited);
	}
	inited = false;
	ASSERT_EQ_INT(ks_rec_stacks_parse((const char *)(c + 1), c->len, &back, &inited, why, sizeof(why)), 0);
	/* twice into the same model: the counts add */
	ASSERT_EQ_INT(ks_rec_stacks_parse((const char *)(c + 1), c->len, &back, &inited, why, sizeof(why)), 0);
	EXPECT_EQ_U64(back.total, 200);
	ks_stacks_free(&back);
	ks_stacks_free(&st);
	free(file);
}
