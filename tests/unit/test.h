/* A tiny unit-test framework: TEST() registers a case, EXPECT_ and ASSERT_ checks report file:line, main prints PASS:/FAIL: lines. */
#ifndef KS_TEST_H
#define KS_TEST_H

/*
 * Each tests/unit/test_*.c is one binary that includes this header once:
 * the header supplies main().  A case is
 *
 *	TEST(slot_roundtrip)
 *	{
 *		ASSERT_EQ_U64(ks_hist_slot(0), 0);
 *		EXPECT_TRUE(x < y);
 *	}
 *
 * EXPECT_ checks record a failure and carry on (they return whether they held);
 * ASSERT_ ones also return from the case.  Every case prints exactly one line,
 * "PASS: file/case" or "FAIL: file/case: file:line: why" (the first failed
 * check, "+N more" when there were others; the others go to stderr), which
 * tests/run.sh counts.  The binary exits 1 when any case failed.  An
 * argument runs only the cases whose name contains it.
 */

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define T_MAX_CASES 256

struct t_case {
	const char *name;
	void (*fn)(void);
	int line;
};

static struct t_case t_cases[T_MAX_CASES];
static int t_ncases;

/* State of the case that is running. */
static struct {
	int failed;
	char why[768];
} t_cur;

static inline void t_register(const char *name, void (*fn)(void), int line)
{
	if (t_ncases == T_MAX_CASES) {
		fprintf(stderr, "test.h: more than %d cases\n", T_MAX_CASES);
		exit(2);
	}
	t_cases[t_ncases++] = (struct t_case){ name, fn, line };
}

#define TEST(name)                                                                                 \
	static void name(void);                                                                    \
	__attribute__((constructor)) static void t_reg_##name(void) { t_register(#name, name, __LINE__); } \
	static void name(void)

/* Records a failed check unless @ok; returns @ok. */
static inline bool __attribute__((format(printf, 4, 5)))
t_check(bool ok, const char *file, int line, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (ok)
		return true;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!t_cur.failed++)
		snprintf(t_cur.why, sizeof(t_cur.why), "%s:%d: %s", file, line, msg);
	else if (t_cur.failed <= 20)
		fprintf(stderr, "    also %s:%d: %s\n", file, line, msg);
	return false;
}

static inline bool t_eq_u64(uint64_t a, uint64_t b, const char *ea, const char *eb, const char *file, int line)
{
	return t_check(a == b, file, line, "%s == %s: %" PRIu64 " != %" PRIu64, ea, eb, a, b);
}

static inline bool t_eq_i64(int64_t a, int64_t b, const char *ea, const char *eb, const char *file, int line)
{
	return t_check(a == b, file, line, "%s == %s: %" PRId64 " != %" PRId64, ea, eb, a, b);
}

static inline bool t_eq_str(const char *a, const char *b, const char *ea, const char *eb, const char *file,
			    int line)
{
	if (a && b && !strcmp(a, b))
		return true;
	/* long texts: show where they first differ */
	if (a && b) {
		size_t i = 0;

		while (a[i] && a[i] == b[i])
			i++;
		return t_check(false, file, line, "%s == %s: differ at byte %zu: \"%.60s\" vs \"%.60s\"", ea, eb, i,
			       a + i, b + i);
	}
	return t_check(false, file, line, "%s == %s: \"%s\" vs \"%s\"", ea, eb, a ? a : "(null)",
		       b ? b : "(null)");
}

#define EXPECT_TRUE(c) t_check(!!(c), __FILE__, __LINE__, "expected %s", #c)
#define EXPECT_EQ_U64(a, b) t_eq_u64((uint64_t)(a), (uint64_t)(b), #a, #b, __FILE__, __LINE__)
#define EXPECT_EQ_INT(a, b) t_eq_i64((int64_t)(a), (int64_t)(b), #a, #b, __FILE__, __LINE__)
#define EXPECT_EQ_STR(a, b) t_eq_str((a), (b), #a, #b, __FILE__, __LINE__)
#define EXPECT_LE_DBL(a, b)                                                                        \
	t_check((double)(a) <= (double)(b), __FILE__, __LINE__, "%s <= %s: %.9g > %.9g", #a, #b,    \
		(double)(a), (double)(b))
#define EXPECT_NEAR(a, b, tol)                                                                     \
	t_check(fabs((double)(a) - (double)(b)) <= (double)(tol), __FILE__, __LINE__,               \
		"%s ~ %s: %.17g vs %.17g (tolerance %g)", #a, #b, (double)(a), (double)(b), (double)(tol))

/* The same checks, ending the case when they fail. */
#define ASSERT(check)                                                                              \
	do {                                                                                       \
		if (!(check))                                                                      \
			return;                                                                    \
	} while (0)
#define ASSERT_TRUE(c) ASSERT(EXPECT_TRUE(c))
#define ASSERT_EQ_U64(a, b) ASSERT(EXPECT_EQ_U64(a, b))
#define ASSERT_EQ_INT(a, b) ASSERT(EXPECT_EQ_INT(a, b))
#define ASSERT_EQ_STR(a, b) ASSERT(EXPECT_EQ_STR(a, b))

/* splitmix64: a fixed-seed PRNG, so every run checks the same numbers. */
static inline uint64_t t_rand(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in (0, 1): never 0, so log() of it is finite. */
static inline double t_rand_unit(uint64_t *state)
{
	return ((double)(t_rand(state) >> 11) + 0.5) / 9007199254740992.0;
}

/*
 * Captures what is written to @fd (STDOUT_FILENO, STDERR_FILENO) between
 * t_capture_begin and t_capture_end, which returns it as a malloc'd string.
 */
struct t_capture {
	int fd, saved;
	FILE *tmp;
};

static inline void t_capture_begin(struct t_capture *c, int fd)
{
	fflush(stdout);
	fflush(stderr);
	c->fd = fd;
	c->tmp = tmpfile();
	c->saved = dup(fd);
	if (!c->tmp || c->saved < 0 || dup2(fileno(c->tmp), fd) < 0) {
		perror("test.h: capture");
		exit(2);
	}
}

static inline char *t_capture_end(struct t_capture *c)
{
	long n;
	char *s;

	fflush(stdout);
	fflush(stderr);
	dup2(c->saved, c->fd);
	close(c->saved);
	/* the fd was written to, not the FILE: ask the fd */
	n = lseek(fileno(c->tmp), 0, SEEK_END);
	s = calloc(1, (size_t)(n > 0 ? n : 0) + 1);
	if (!s) {
		perror("test.h: capture");
		exit(2);
	}
	if (n > 0 && pread(fileno(c->tmp), s, (size_t)n, 0) != n) {
		perror("test.h: capture read");
		exit(2);
	}
	fclose(c->tmp);
	return s;
}

/* Number of '\n'-terminated lines in @s. */
static inline int t_count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* The including file's name: "tests/unit/test_hist.c" -> "hist" */
static inline const char *t_suite(char *buf, size_t len)
{
	const char *b = strrchr(__BASE_FILE__, '/');

	b = b ? b + 1 : __BASE_FILE__;
	if (!strncmp(b, "test_", 5))
		b += 5;
	snprintf(buf, len, "%s", b);
	if (strchr(buf, '.'))
		*strchr(buf, '.') = 0;
	return buf;
}

/*
 * T_CACHE_DIR(dir): a fresh directory, char dir[256] under /tmp, made
 * before main and given to the code under test as KSIGHT_DEBUG_CACHE (the
 * cache decides its directory once per process, at its first use), and
 * removed at exit.
 */
#define T_CACHE_DIR(dir)                                                                           \
	static char dir[256];                                                                      \
	__attribute__((constructor)) static void t_cache_dir_make(void)                            \
	{                                                                                          \
		snprintf(dir, sizeof(dir), "/tmp/ks-cache.XXXXXX");                                \
		if (!mkdtemp(dir))                                                                 \
			abort();                                                                   \
		setenv("KSIGHT_DEBUG_CACHE", dir, 1);                                              \
	}                                                                                          \
	__attribute__((destructor)) static void t_cache_dir_remove(void)                           \
	{                                                                                          \
		char cmd[300];                                                                     \
                                                                                                   \
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);                                      \
		if (system(cmd))                                                                   \
			fprintf(stderr, "could not remove %s\n", dir);                             \
	}

static int t_case_cmp(const void *a, const void *b)
{
	return ((const struct t_case *)a)->line - ((const struct t_case *)b)->line;
}

int main(int argc, char **argv)
{
	char suite[64];
	int failed = 0, ran = 0;

	/* lines in order even when stdout and stderr go to one file */
	setvbuf(stdout, NULL, _IOLBF, 0);
	t_suite(suite, sizeof(suite));
	qsort(t_cases, (size_t)t_ncases, sizeof(t_cases[0]), t_case_cmp);
	for (int i = 0; i < t_ncases; i++) {
		if (argc > 1 && !strstr(t_cases[i].name, argv[1]))
			continue;
		memset(&t_cur, 0, sizeof(t_cur));
		t_cases[i].fn();
		ran++;
		if (t_cur.failed) {
			failed++;
			if (t_cur.failed > 1)
				printf("FAIL: %s/%s: %s (+%d more)\n", suite, t_cases[i].name, t_cur.why,
				       t_cur.failed - 1);
			else
				printf("FAIL: %s/%s: %s\n", suite, t_cases[i].name, t_cur.why);
		} else {
			printf("PASS: %s/%s\n", suite, t_cases[i].name);
		}
	}
	printf("# %s: %d cases, %d failed\n", suite, ran, failed);
	return failed ? 1 : 0;
}

#endif /* KS_TEST_H */
