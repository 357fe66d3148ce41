/* The trace.dat writer (report --trace-dat) read back by libtracecmd, no root: every record's CPU, ns time and bytes, across a time-extend gap. */
#include <sys/stat.h>
#include <trace-cmd.h>
#include "format/recording.h"
#include "output/tracedat.h"
#include "test.h"

/* sched_switch and sched_process_exec on two CPUs (the fuzzer's seed: a mode byte, then the recording) */
#define SEED "tests/fuzz/corpus/recfile/seed2"

/* A temporary file holding the seed's recording, loaded into @rec; 0 or negative errno. */
static int load(struct ks_recording *rec, char *path)
{
	FILE *in = fopen(SEED, "rb");
	unsigned char buf[16384];
	size_t n = 0;
	int fd, err = -EIO;

	if (!in)
		return -errno;
	if (fgetc(in) != EOF)
		n = fread(buf, 1, sizeof(buf), in);
	fclose(in);
	strcpy(path, "/tmp/ks-test-tracedat-XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		return -errno;
	if (n && write(fd, buf, n) == (ssize_t)n)
		err = ks_recording_load(rec, path);
	close(fd);
	unlink(path);
	return err;
}

/* @rec written as a trace.dat at @path; 0 or negative errno. */
static int write_dat(const struct ks_recording *rec, const char *path, int64_t off)
{
	FILE *f = fopen(path, "wb");
	uint64_t big = 0;
	int err;

	if (!f)
		return -errno;
	err = ks_tracedat_write(rec, off, f, &big);
	if (fclose(f) && !err)
		err = -EIO;
	return err ? err : big ? -E2BIG : 0;
}

/* Reads @path with libtracecmd: each record must be @rec's next, in time order, + @off. */
static void check_read_back(const struct ks_recording *rec, const char *path, int64_t off)
{
	struct tracecmd_input *h = tracecmd_open(path, TRACECMD_FL_LOAD_NO_PLUGINS);
	size_t i = 0;

	ASSERT_TRUE(h);
	for (int cpu = 0; cpu < rec->ncpus; cpu++) {
		struct tep_record *r;

		/* one CPU at a time: the recording's events of that CPU, in order */
		for (size_t j = 0; j < rec->nev; j++) {
			const struct ks_rec_ev *x = &rec->evs[j];

			if (x->e->cpu != cpu)
				continue;
			r = tracecmd_read_data(h, cpu);
			if (!EXPECT_TRUE(r))
				break;
			EXPECT_EQ_U64(r->ts, x->e->ts + (uint64_t)off);
			EXPECT_EQ_INT(r->cpu, cpu);
			EXPECT_TRUE(r->size >= x->e->len && !memcmp(r->data, x->e + 1, x->e->len));
			tracecmd_free_record(r);
			i++;
		}
		r = tracecmd_read_data(h, cpu);
		EXPECT_TRUE(!r);
		tracecmd_free_record(r);
	}
	EXPECT_EQ_U64(i, rec->nev);
	tracecmd_close(h);
}

/* @rec written next to @src as a trace.dat with @off, read back whole by libtracecmd, removed. */
static void roundtrip(const struct ks_recording *rec, const char *src, int64_t off)
{
	char path[80];
	struct stat st;

	snprintf(path, sizeof(path), "%s.dat", src);
	if (EXPECT_EQ_INT(write_dat(rec, path, off), 0)) {
		/* the CPU data starts on a page boundary, whole pages */
		EXPECT_TRUE(stat(path, &st) == 0 && st.st_size % KS_TDAT_PAGE == 0);
		check_read_back(rec, path, off);
	}
	unlink(path);
}

TEST(tracedat_read_back_by_libtracecmd)
{
	struct ks_recording rec;
	char src[64];

	ASSERT_EQ_INT(load(&rec, src), 0);
	ASSERT_EQ_INT(rec.nev, 4);
	roundtrip(&rec, src, 0);
	/* CLOCK_REALTIME's offset moves every timestamp */
	roundtrip(&rec, src, 1000000000);
	ks_recording_free(&rec);
}

TEST(tracedat_gap_past_27_bits_takes_a_time_extend)
{
	struct ks_recording rec;
	char src[64];

	ASSERT_EQ_INT(load(&rec, src), 0);
	/* the last event 10 s later: a delta of 2^33 ns, past a ring-buffer header's 27 bits */
	((struct ks_rec_event *)rec.evs[rec.nev - 1].e)->ts += 10000000000ull;
	roundtrip(&rec, src, 0);
	ks_recording_free(&rec);
}

TEST(tracedat_write_error_is_returned)
{
	struct ks_recording rec;
	char src[64];
	FILE *full = fopen("/dev/full", "w");
	uint64_t big;

	ASSERT_TRUE(full);
	ASSERT_EQ_INT(load(&rec, src), 0);
	EXPECT_TRUE(ks_tracedat_write(&rec, 0, full, &big) < 0 || fflush(full) != 0);
	fclose(full);
	ks_recording_free(&rec);
}
