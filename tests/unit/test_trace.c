/* The trace-event JSON writer (report --format perfetto) on a real recording, no root: every track, slice and instant, byte for byte. */
#include <sys/mman.h>
#include "format/recording.h"
#include "output/trace.h"
#include "test.h"

/* sched_switch and sched_process_exec on two CPUs; one mode byte for the fuzzer, then the file */
#define SEED "tests/fuzz/corpus/recfile/seed2"

/* The seed's recording, loaded from memory; 0 or negative errno. */
static int load_seed(struct ks_recording *rec)
{
	FILE *f = fopen(SEED, "rb");
	char path[64], buf[16384];
	size_t n;
	int fd, err;

	if (!f)
		return -errno;
	n = fgetc(f) == EOF ? 0 : fread(buf, 1, sizeof(buf), f);
	fclose(f);
	fd = memfd_create("ks-test-trace", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	err = n && write(fd, buf, n) == (ssize_t)n ? ks_recording_load(rec, path) : -EIO;
	close(fd);
	return err;
}

/* @rec as trace-event JSON with @offset_ns, malloc'd (NULL when the writer failed). */
static char *render(const struct ks_recording *rec, int64_t offset_ns)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	int err;

	if (!m)
		return NULL;
	err = ks_trace_write_perfetto(rec, offset_ns, m);
	fclose(m);
	if (err) {
		free(buf);
		return NULL;
	}
	return buf;
}

/*
 * The document a trace viewer loads: a process and a thread named from the comms per task, exec
 * instants on the thread that exec'd, sh's slices on its own track, microseconds exact from the ns.
 * The first slice ends at true's exec on the same CPU (sh's switch-out is not in the seed).
 */
static const char expected[] =
	"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":29747,\"tid\":29747,\"args\":{\"name\":\"sh\"}},{"
	"\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":29747,\"tid\":29747,\"args\":{\"name\":\"sh\"}},{"
	"\"ph\":\"M\",\"name\":\"process_name\",\"pid\":29948,\"tid\":29948,\"args\":{\"name\":\"true\"}},{"
	"\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":29948,\"tid\":29948,\"args\":{\"name\":\"true\"}},{"
	"\"ph\":\"M\",\"name\":\"process_name\",\"pid\":29949,\"tid\":29949,\"args\":{\"name\":\"true\"}},{"
	"\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":29949,\"tid\":29949,\"args\":{\"name\":\"true\"}},{"
	"\"ph\":\"i\",\"s\":\"t\",\"name\":\"sched:sched_process_exec\",\"pid\":29948,\"tid\":29948,\"ts\":54023767938.428,\"args\":{\"cpu\":1,\"filename\":\"/bin/true\",\"pid\":29948,\"old_pid\":29948}},{"
	"\"ph\":\"X\",\"name\":\"sh\",\"cat\":\"sched\",\"pid\":29747,\"tid\":29747,\"ts\":54023769634.944,\"dur\":502.982,\"args\":{\"cpu\":1}},{"
	"\"ph\":\"i\",\"s\":\"t\",\"name\":\"sched:sched_process_exec\",\"pid\":29949,\"tid\":29949,\"ts\":54023770137.926,\"args\":{\"cpu\":1,\"filename\":\"/usr/bin/true\",\"pid\":29949,\"old_pid\":29949}},{"
	"\"ph\":\"X\",\"name\":\"sh\",\"cat\":\"sched\",\"pid\":29747,\"tid\":29747,\"ts\":54023771780.231,\"dur\":0.000,\"args\":{\"cpu\":1}}]}\n";

TEST(perfetto_tracks_slices_instants)
{
	struct ks_recording rec;
	char *s;

	ASSERT_EQ_INT(load_seed(&rec), 0);
	ASSERT_EQ_INT(rec.nev, 4);
	s = render(&rec, 0);
	ASSERT_TRUE(s);
	EXPECT_EQ_STR(s, expected);
	free(s);
	ks_recording_free(&rec);
}

TEST(perfetto_offset_moves_every_timestamp)
{
	struct ks_recording rec;
	char *s;

	ASSERT_EQ_INT(load_seed(&rec), 0);
	/* CLOCK_REALTIME: each ts moves by the offset in microseconds, durations stay */
	s = render(&rec, 1000000000);
	ASSERT_TRUE(s);
	EXPECT_TRUE(strstr(s, "\"ts\":54024767938.428,"));
	EXPECT_TRUE(strstr(s, "\"ts\":54024769634.944,\"dur\":502.982,"));
	EXPECT_TRUE(!strstr(s, "\"ts\":54023"));
	free(s);
	ks_recording_free(&rec);
}

TEST(perfetto_write_error_is_returned)
{
	struct ks_recording rec;
	FILE *full = fopen("/dev/full", "w");

	ASSERT_TRUE(full);
	ASSERT_EQ_INT(load_seed(&rec), 0);
	EXPECT_TRUE(ks_trace_write_perfetto(&rec, 0, full) < 0);
	fclose(full);
	ks_recording_free(&rec);
}
