/* Unit test: the process-wide caches (kernel BTF, probes, mount points, pid namespace, CPU count, log lines) from several threads at once. */
#include <pthread.h>
#include "core/bpfutil.h"
#include "core/filter.h"
#include "core/log.h"
#include "core/probe.h"
#include "core/tracefs.h"
#include "test.h"

#define NTHREADS 8
#define NLINES 300

static pthread_barrier_t start;

struct seen {
	const void *btf;
	int ncpus;
	const char *cg2, *tracefs;
	const struct ks_probe_result *probe;
	char comm[16];
};

static void *first_calls(void *arg)
{
	struct seen *s = arg;

	/* all threads leave the barrier together: each cache is filled by racing first callers */
	pthread_barrier_wait(&start);
	s->btf = ks_kernel_btf();
	s->ncpus = ks_ncpus();
	s->cg2 = ks_cgroup2_mount();
	s->tracefs = ks_tracefs_find();
	s->probe = ks_probe(KS_FEAT_BTF);
	ks_pid_comm_peek(-1, (uint32_t)getpid(), s->comm);
	return NULL;
}

/* Every thread sees one value per cache; under ASan a second BTF loaded and dropped is a leak. */
TEST(caches_filled_once_under_racing_threads)
{
	struct seen s[NTHREADS] = { 0 };
	pthread_t t[NTHREADS];

	ASSERT_EQ_INT(pthread_barrier_init(&start, NULL, NTHREADS), 0);
	for (int i = 0; i < NTHREADS; i++)
		ASSERT_EQ_INT(pthread_create(&t[i], NULL, first_calls, &s[i]), 0);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&start);
	for (int i = 0; i < NTHREADS; i++) {
		EXPECT_TRUE(s[i].btf == ks_kernel_btf());
		EXPECT_EQ_INT(s[i].ncpus, ks_ncpus());
		EXPECT_TRUE(s[i].cg2 == ks_cgroup2_mount());
		EXPECT_TRUE(s[i].tracefs == ks_tracefs_find());
		EXPECT_TRUE(s[i].probe == ks_probe(KS_FEAT_BTF));
		EXPECT_EQ_INT(s[i].probe->ok, s[0].probe->ok);
		EXPECT_EQ_STR(s[i].comm, s[0].comm);
	}
	EXPECT_TRUE(s[0].ncpus >= 1);
	EXPECT_TRUE(s[0].comm[0] && strcmp(s[0].comm, "?"));
}

static void *log_lines(void *arg)
{
	int id = (int)(intptr_t)arg;

	pthread_barrier_wait(&start);
	for (int i = 0; i < NLINES; i++)
		p_warn("thread %d line %d of %s", id, i, "a message long enough to be written in several pieces");
	return NULL;
}

/* p_warn from many threads: every line on stderr is whole, none is mixed with another's. */
TEST(log_lines_whole_from_several_threads)
{
	char path[] = "/tmp/ks_test_logXXXXXX", line[256];
	int fd = mkstemp(path), saved = dup(2), n = 0, bad = 0;
	pthread_t t[NTHREADS];
	FILE *f;

	ASSERT_TRUE(fd >= 0 && saved >= 0);
	fflush(stderr);
	dup2(fd, 2);
	ASSERT_EQ_INT(pthread_barrier_init(&start, NULL, NTHREADS), 0);
	for (int i = 0; i < NTHREADS; i++)
		pthread_create(&t[i], NULL, log_lines, (void *)(intptr_t)i);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&start);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	f = fopen(path, "r");
	ASSERT_TRUE(f != NULL);
	while (fgets(line, sizeof(line), f)) {
		int id, i;
		char tail[128];

		n++;
		if (sscanf(line, "ksight: warning: thread %d line %d of %127[^\n]", &id, &i, tail) != 3 ||
		    strcmp(tail, "a message long enough to be written in several pieces"))
			bad++;
	}
	fclose(f);
	unlink(path);
	close(fd);
	EXPECT_EQ_INT(n, NTHREADS * NLINES);
	EXPECT_EQ_INT(bad, 0);
}
