/* record/report --filter: parser errors and their columns, compile checks against real formats, the branch programs' verdicts on byte buffers, globs against fnmatch. */
#include <fnmatch.h>
#include <event-parse.h>
#include "events/filter.h"
#include "flt_formats.h"
#include "test.h"

/* A sched_switch record: bash (42, state 1) to ksight-rec (-5, prio -3), by pid 7 on CPU 1. */
static struct {
	struct ks_rec_event h;
	unsigned char raw[256];
} sw;

static void make_switch(void)
{
	int32_t i32;
	int64_t i64;
	uint16_t type = 372;

	memset(&sw, 0, sizeof(sw));
	sw.h.len = 64;
	sw.h.cpu = 1;
	strcpy(sw.h.comm, "swapper/1");
	memcpy(sw.raw, &type, 2);
	i32 = 7;
	memcpy(sw.raw + 4, &i32, 4);
	strcpy((char *)sw.raw + 8, "bash");
	i32 = 42;
	memcpy(sw.raw + 24, &i32, 4);
	i32 = 120;
	memcpy(sw.raw + 28, &i32, 4);
	i64 = 1;
	memcpy(sw.raw + 32, &i64, 8);
	memcpy(sw.raw + 40, "ksight-rec-long!", 16); /* no NUL: the whole array is the string */
	i32 = -5;
	memcpy(sw.raw + 56, &i32, 4);
	i32 = -3;
	memcpy(sw.raw + 60, &i32, 4);
}

/* -1: does not parse or compile; else the verdict on the record @e. */
static int verdict(const char *fmt, const char *text, const struct ks_rec_event *e, struct ks_flt_err *err)
{
	struct ks_flt_expr *x = ks_flt_parse(text, err);
	struct ks_flt_prog prog;
	int rc;

	if (!x)
		return -1;
	rc = ks_flt_compile_format(x, "sched", fmt, &prog, err) ? -1 : ks_flt_run(&prog, e);
	if (rc >= 0)
		for (uint32_t i = 0; i < prog.n; i++) {
			/* every jump forward, every pattern index in range */
			EXPECT_TRUE(prog.insn[i].t > i && prog.insn[i].f > i);
			EXPECT_TRUE(prog.insn[i].t < prog.n || prog.insn[i].t >= KS_FLT_ACCEPT);
			EXPECT_TRUE(prog.insn[i].f < prog.n || prog.insn[i].f >= KS_FLT_ACCEPT);
		}
	ks_flt_expr_free(x);
	return rc;
}

TEST(switch_verdicts)
{
	static const struct {
		const char *expr;
		int want;
	} cases[] = {
		{ "prev_pid == 42", 1 },
		{ "prev_pid != 42", 0 },
		{ "prev_pid == 0x2a", 1 },
		{ "prev_pid == 052", 1 },
		{ "prev_pid > 41 && prev_pid < 43", 1 },
		{ "prev_pid >= 43 || prev_pid <= 41", 0 },
		{ "next_pid < 0", 1 },	 /* signed */
		{ "next_pid == -5", 1 },
		{ "next_pid > -6 && next_prio <= -3", 1 },
		{ "prev_state & 3", 1 },
		{ "prev_state & 2", 0 },
		{ "!(prev_state & 2)", 1 },
		{ "!!(prev_pid == 42)", 1 },
		{ "prev_pid == 1 || prev_pid == 42 && next_pid == -5", 1 }, /* && binds tighter */
		{ "(prev_pid == 1 || prev_pid == 42) && next_pid == 5", 0 },
		{ "prev_pid == 1 || prev_pid == 2 || prev_pid == 3 || prev_pid == 42", 1 },
		{ "!(prev_pid == 1 || next_pid == 2) && !(prev_prio != 120)", 1 },
		{ "prev_comm == \"bash\"", 1 },
		{ "prev_comm == \"bas\"", 0 },
		{ "prev_comm == \"bash \"", 0 },
		{ "prev_comm != \"bash\"", 0 },
		{ "prev_comm ~ \"b*\"", 1 },
		{ "prev_comm ~ \"*sh\"", 1 },
		{ "prev_comm ~ \"b?s?\"", 1 },
		{ "prev_comm ~ \"b?s\"", 0 },
		{ "prev_comm ~ \"*\"", 1 },
		{ "prev_comm !~ \"z*\"", 1 },
		{ "prev_comm == \"b*\"", 0 }, /* == takes * literally */
		{ "prev_comm ~ \"b\\\\*\"", 0 },
		{ "next_comm == \"ksight-rec-long!\"", 1 }, /* 16 bytes, no NUL */
		{ "next_comm ~ \"ksight*\" && next_comm ~ \"*!\"", 1 },
		{ "next_comm ~ \"*rec*long*\"", 1 },
		{ "comm == \"swapper/1\"", 1 },	/* the task's, from the header */
		{ "comm ~ \"swapper/?\" && cpu == 1", 1 },
		{ "cpu != 1", 0 },
		{ "common_pid == 7 && common_type == 372", 1 },
	};

	make_switch();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ks_flt_err err = { 0 };
		int v = verdict(fmt_switch, cases[i].expr, &sw.h, &err);

		if (!EXPECT_EQ_INT(v, cases[i].want))
			fprintf(stderr, "  for: %s (%s)\n", cases[i].expr, v < 0 ? err.msg : "");
	}
}

TEST(dynamic_string_and_array)
{
	struct {
		struct ks_rec_event h;
		unsigned char raw[128];
	} ex = { 0 };
	uint32_t loc = 20 | (14u << 16); /* "/usr/bin/true" and its NUL at offset 20 */
	int64_t id = 110;
	uint64_t a1 = 0xffffffffull;
	struct ks_flt_err err;

	ex.h.len = 34;
	memcpy(ex.raw + 8, &loc, 4);
	memcpy(ex.raw + 20, "/usr/bin/true", 14);
	EXPECT_EQ_INT(verdict(fmt_exec, "filename == \"/usr/bin/true\"", &ex.h, &err), 1);
	EXPECT_EQ_INT(verdict(fmt_exec, "filename ~ \"*/tru?\"", &ex.h, &err), 1);
	EXPECT_EQ_INT(verdict(fmt_exec, "filename ~ \"/bin/*\"", &ex.h, &err), 0);
	/* a locator pointing out of the record: an empty string, never a read past it */
	loc = 200 | (14u << 16);
	memcpy(ex.raw + 8, &loc, 4);
	EXPECT_EQ_INT(verdict(fmt_exec, "filename ~ \"*\"", &ex.h, &err), 1);
	EXPECT_EQ_INT(verdict(fmt_exec, "filename == \"/usr/bin/true\"", &ex.h, &err), 0);

	memset(&ex, 0, sizeof(ex));
	ex.h.len = 64;
	memcpy(ex.raw + 8, &id, 8);
	memcpy(ex.raw + 16 + 8, &a1, 8);
	EXPECT_EQ_INT(verdict(fmt_sys_enter, "id == 110 && args[1] == 0xffffffff && args[0] == 0", &ex.h, &err), 1);
	EXPECT_EQ_INT(verdict(fmt_sys_enter, "args[5] != 0", &ex.h, &err), 0);
	/* a record too short for the field: the field reads as 0 */
	ex.h.len = 20;
	EXPECT_EQ_INT(verdict(fmt_sys_enter, "args[1] == 0", &ex.h, &err), 1);
}

TEST(errors_point_at_the_token)
{
	static const struct {
		const char *fmt, *expr;
		int col;
		const char *msg;
	} cases[] = {
		{ fmt_switch, "", 0, "empty filter" },
		{ fmt_switch, "   ", 0, "empty filter" },
		{ fmt_switch, "prev_pid = 1", 9, "'=' is not an operator" },
		{ fmt_switch, "prev_pid == 1 | next_pid == 2", 14, "'||'" },
		{ fmt_switch, "prev_pid == 1 &&", 16, "expected a field name" },
		{ fmt_switch, "prev_pid == 1 next_pid", 14, "expected '&&', '||' or the end" },
		{ fmt_switch, "(prev_pid == 1", 0, "'(' not closed" },
		{ fmt_switch, "prev_pid == 1)", 13, "')' without its '('" },
		{ fmt_switch, "prev_pid == 12a", 14, "unexpected 'a'" },
		{ fmt_switch, "prev_pid == 99999999999999999999", 12, "out of range" },
		{ fmt_switch, "prev_pid == 09", 13, "bad digit" },
		{ fmt_switch, "prev_comm == \"bash", 13, "not closed" },
		{ fmt_switch, "prev_comm == bash", 13, "quoted string" },
		{ fmt_switch, "prev_pid $ 3", 9, "unexpected character '$'" },
		{ fmt_switch, "nope == 1", 0, "unknown field 'nope' in sched:sched_switch" },
		{ fmt_switch, "prev_pid == 1 && nope > 2", 17, "unknown field 'nope'" },
		{ fmt_switch, "prev_comm == 5", 13, "type mismatch" },
		{ fmt_switch, "prev_pid == \"x\"", 12, "type mismatch" },
		{ fmt_switch, "prev_pid ~ 3", 9, "'~' is for strings" },
		{ fmt_switch, "prev_comm < \"a\"", 10, "== != ~ !~ only" },
		{ fmt_switch, "prev_pid == 3000000000", 12, "out of range" },
		{ fmt_switch, "prev_pid[0] == 1", 8, "not an array" },
		{ fmt_switch, "prev_comm[0] == 1", 9, "no index" },
		{ fmt_switch, "common_flags == 256", 16, "out of range" },
		{ fmt_switch, "common_flags == -1", 16, "out of range" },
		{ fmt_switch, "prev_pid == -2147483649", 12, "out of range" },
		{ fmt_sys_enter, "args == 1", 0, "is an array" },
		{ fmt_sys_enter, "args[6] == 1", 4, "index 6 out of" },
		{ fmt_sys_enter, "args[0] == -1", 11, "unsigned" },
		{ fmt_switch, "prev_comm ~ \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"", 13, "longer than 64" },
		{ fmt_switch, "prev_comm ~ \"a\" || prev_comm ~ \"b\" || prev_comm ~ \"c\" || prev_comm ~ \"d\" || next_comm ~ \"e\"",
		  88, "at most 4 string" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ks_flt_err err = { .col = -2 };
		int v = verdict(cases[i].fmt, cases[i].expr, &sw.h, &err);

		if (!EXPECT_EQ_INT(v, -1) || !EXPECT_EQ_INT(err.col, cases[i].col) ||
		    !EXPECT_TRUE(strstr(err.msg, cases[i].msg)))
			fprintf(stderr, "  for: %s -> col %d: %s\n", cases[i].expr, err.col, err.msg);
	}
}

TEST(limits)
{
	char big[4096] = "", deep[512] = "";
	struct ks_flt_err err;
	int n = 0;

	make_switch();
	/* 32 comparisons compile and run; a 33rd is refused at its own column */
	for (int i = 0; i < 32; i++)
		n += snprintf(big + n, sizeof(big) - (size_t)n, "%sprev_pid == %d", i ? " || " : "", i == 31 ? 42 : i);
	EXPECT_EQ_INT(verdict(fmt_switch, big, &sw.h, &err), 1);
	snprintf(big + n, sizeof(big) - (size_t)n, " || next_pid == 1");
	EXPECT_EQ_INT(verdict(fmt_switch, big, &sw.h, &err), -1);
	EXPECT_EQ_INT(err.col, n + 4);
	/* nesting is bounded (the parser recurses) */
	for (n = 0; n < 100; n++)
		deep[n] = '(';
	strcpy(deep + n, "prev_pid == 42");
	EXPECT_EQ_INT(verdict(fmt_switch, deep, &sw.h, &err), -1);
	EXPECT_TRUE(strstr(err.msg, "nested too deeply"));
	memset(deep, '!', 300);
	strcpy(deep + 300, "prev_pid == 42");
	EXPECT_EQ_INT(verdict(fmt_switch, deep, &sw.h, &err), -1);
}

/* The step matcher against fnmatch(3) on every string and pattern over a small alphabet, within its step bound. */
static int glob_ref(const char *pat, const char *s)
{
	struct ks_flt_pat p = { 0 };
	struct ks_flt_glob g = { .n = (uint32_t)strlen(s) };
	uint32_t steps = 0;

	for (p.len = 0; pat[p.len]; p.len++) {
		p.c[p.len] = pat[p.len];
		if (pat[p.len] == '*')
			p.star |= 1ull << p.len;
		if (pat[p.len] == '?')
			p.any |= 1ull << p.len;
	}
	while (!ks_flt_glob_step(&g, s, &p))
		if (++steps > (g.n + 2) * (p.len + 2))
			return -1;
	return (int)g.result;
}

TEST(glob_matches_fnmatch)
{
	static const char al[] = "ab*?";
	char pat[8], s[8];
	int checked = 0, bad = 0;

	for (int pl = 0; pl <= 5; pl++) {
		int np = 1;

		for (int i = 0; i < pl; i++)
			np *= 4;
		for (int pi = 0; pi < np; pi++) {
			for (int i = 0, v = pi; i < pl; i++, v /= 4)
				pat[i] = al[v % 4];
			pat[pl] = 0;
			for (int sl = 0; sl <= 5; sl++)
				for (int si = 0; si < (1 << sl); si++) {
					int want, got;

					for (int i = 0; i < sl; i++)
						s[i] = (si >> i) & 1 ? 'b' : 'a';
					s[sl] = 0;
					want = fnmatch(pat, s, 0) == 0;
					got = glob_ref(pat, s);
					checked++;
					if (got != want && bad++ < 5)
						fprintf(stderr, "  glob '%s' on '%s': %d, fnmatch %d\n", pat, s, got, want);
				}
		}
	}
	EXPECT_EQ_INT(bad, 0);
	EXPECT_TRUE(checked > 50000);
	/* the worst case stays inside the kernel's bpf_loop bound */
	{
		char longs[KS_FLT_STR_MAX + 1], longp[KS_FLT_PAT_MAX + 1];

		memset(longs, 'a', KS_FLT_STR_MAX);
		longs[KS_FLT_STR_MAX] = 0;
		for (int i = 0; i < KS_FLT_PAT_MAX; i++)
			longp[i] = i % 2 ? 'a' : '*';
		longp[KS_FLT_PAT_MAX - 1] = 'b';
		longp[KS_FLT_PAT_MAX] = 0;
		EXPECT_EQ_INT(glob_ref(longp, longs), 0);
	}
}
