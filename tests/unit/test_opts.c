/* Unit tests of the shared option parser (src/core/opts.h) and the number parsers under it (src/core/parse.h). */
#include "test.h"
#include "core/log.h"
#include "core/opts.h"
#include "core/parse.h"

enum { OPT_LONG_ONLY = 300 };

static const struct ks_optdef own_opts[] = {
	{ "flag", 'F', NULL, "a flag of the command" },
	{ "level", 'l', "N", "a level from 1 to 3" },
	{ "long-only", OPT_LONG_ONLY, "WORD", "an option with no short form" },
	{ 0 },
};

static const struct ks_cmd_spec spec = {
	.name = "test",
	.summary = "A command for the tests.",
	.args = "[ARG]",
	.common = KS_O_COLLECTOR,
	.by_keys = "syscall|pid|comm",
	.opts = own_opts,
};

/* accepts only -d and the built-in -v/-h */
static const struct ks_cmd_spec spec_min = { .name = "mini", .summary = "Minimal.", .common = KS_O_DURATION };
/* the same without -- CMD: there "--" only ends the options */
static const struct ks_cmd_spec spec_nocmd = {
	.name = "test",
	.summary = "A command for the tests.",
	.args = "[ARG]",
	.common = KS_O_COLLECTOR & ~(unsigned int)KS_O_CMD,
	.by_keys = "syscall|pid|comm",
	.opts = own_opts,
};

struct cb_ctx {
	int calls;
	bool flag;
	int level;
	const char *word;
};

static int cb(void *vctx, int id, const char *arg)
{
	struct cb_ctx *ctx = vctx;

	ctx->calls++;
	switch (id) {
	case 'F':
		ctx->flag = true;
		return 0;
	case 'l':
		if (!arg || arg[0] < '1' || arg[0] > '3' || arg[1]) {
			p_err("invalid level '%s'", arg);
			return -EINVAL;
		}
		ctx->level = arg[0] - '0';
		return 0;
	case OPT_LONG_ONLY:
		ctx->word = arg;
		return 0;
	}
	return -EINVAL;
}

/* One parse, with what it wrote to stdout and stderr. */
struct res {
	int rc;
	char *out, *err;
	struct ks_common c;
	struct cb_ctx ctx;
};

static struct res *run(const struct ks_cmd_spec *sp, int argc, char **argv)
{
	static struct res r;
	struct t_capture co, ce;

	free(r.out);
	free(r.err);
	memset(&r, 0, sizeof(r));
	ks_json = false;
	ks_verbose = 0;
	ks_common_init(&r.c);
	t_capture_begin(&co, STDOUT_FILENO);
	t_capture_begin(&ce, STDERR_FILENO);
	r.rc = ks_opts_parse(sp, argc, argv, &r.c, cb, &r.ctx);
	r.err = t_capture_end(&ce);
	r.out = t_capture_end(&co);
	return &r;
}

#define ARGV(...) ((char *[]){ "test", __VA_ARGS__, NULL })
#define ARGC(...) ((int)(sizeof((char *[]){ "test", __VA_ARGS__ }) / sizeof(char *)))
/* parses "test ARGS..." with @sp */
#define PARSE(sp, ...) run((sp), ARGC(__VA_ARGS__), ARGV(__VA_ARGS__))
#define PARSE0(sp) run((sp), 1, (char *[]){ "test", NULL })

/* A rejected parse: -EINVAL, nothing on stdout, one "ksight: error: " line on stderr that contains @what. */
#define EXPECT_REJECTED(r, what)                                                                   \
	do {                                                                                       \
		struct res *r_ = (r);                                                              \
		EXPECT_EQ_INT(r_->rc, -EINVAL);                                                    \
		EXPECT_EQ_INT(t_count_lines(r_->err), 1);                                          \
		EXPECT_TRUE(!strncmp(r_->err, "ksight: error: ", 15));                             \
		t_check(strstr(r_->err, (what)) != NULL, __FILE__, __LINE__, "stderr \"%s\" lacks \"%s\"", \
			r_->err, (what));                                                          \
		EXPECT_EQ_STR(r_->out, "");                                                        \
	} while (0)

TEST(parse_seconds_units)
{
	static const struct { const char *s; double v; } ok[] = {
		{ "5", 5 }, { "0", 0 }, { "1.5", 1.5 }, { "250ms", 0.25 }, { "2s", 2 }, { "1m", 60 },
		{ "1h", 3600 }, { "100us", 1e-4 }, { "500ns", 5e-7 }, { "0.5m", 30 }, { "1e1", 10 },
	};
	static const char *const bad[] = { "", "abc", "5x", "5 ", " 5", "ms", "5mss", "inf", "nan", "1e999", "5S" };
	double v;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		v = -1;
		if (EXPECT_EQ_INT(ks_parse_seconds(ok[i].s, &v), 0))
			t_check(fabs(v - ok[i].v) < 1e-12, __FILE__, __LINE__, "'%s' -> %g, want %g", ok[i].s, v, ok[i].v);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		t_check(ks_parse_seconds(bad[i], &v) == -EINVAL, __FILE__, __LINE__, "'%s' accepted", bad[i]);
	/* negative is out of range, whatever the unit */
	EXPECT_EQ_INT(ks_parse_seconds("-1", &v), -ERANGE);
	EXPECT_EQ_INT(ks_parse_seconds("-1ms", &v), -ERANGE);
	EXPECT_EQ_INT(ks_parse_seconds(NULL, &v), -EINVAL);
}

TEST(parse_u64_range)
{
	uint64_t v = 0;

	EXPECT_EQ_INT(ks_parse_u64("0", 0, 10, &v), 0);
	EXPECT_EQ_U64(v, 0);
	EXPECT_EQ_INT(ks_parse_u64("18446744073709551615", 0, UINT64_MAX, &v), 0);
	EXPECT_EQ_U64(v, UINT64_MAX);
	EXPECT_EQ_INT(ks_parse_u64("18446744073709551616", 0, UINT64_MAX, &v), -ERANGE);
	EXPECT_EQ_INT(ks_parse_u64("11", 0, 10, &v), -ERANGE);
	EXPECT_EQ_INT(ks_parse_u64("4", 5, 10, &v), -ERANGE);
	EXPECT_EQ_INT(ks_parse_u64("-1", 0, 10, &v), -ERANGE);
	EXPECT_EQ_INT(ks_parse_u64("", 0, 10, &v), -EINVAL);
	EXPECT_EQ_INT(ks_parse_u64("1x", 0, 10, &v), -EINVAL);
	EXPECT_EQ_INT(ks_parse_u64("+1", 0, 10, &v), -EINVAL);
	EXPECT_EQ_INT(ks_parse_u64(" 1", 0, 10, &v), -EINVAL);
	EXPECT_EQ_INT(ks_parse_u64("0x1", 0, 10, &v), -EINVAL);
	EXPECT_EQ_U64(v, UINT64_MAX); /* untouched by every failure */
}

TEST(parse_size_suffixes)
{
	uint64_t v = 0;

	EXPECT_EQ_INT(ks_parse_size("4096", &v), 0);
	EXPECT_EQ_U64(v, 4096);
	EXPECT_EQ_INT(ks_parse_size("64k", &v), 0);
	EXPECT_EQ_U64(v, 64 << 10);
	EXPECT_EQ_INT(ks_parse_size("64M", &v), 0);
	EXPECT_EQ_U64(v, 64 << 20);
	EXPECT_EQ_INT(ks_parse_size("2G", &v), 0);
	EXPECT_EQ_U64(v, 2ull << 30);
	EXPECT_EQ_INT(ks_parse_size("17179869184G", &v), -ERANGE);
	EXPECT_EQ_INT(ks_parse_size("1T", &v), -EINVAL);
	EXPECT_EQ_INT(ks_parse_size("1kk", &v), -EINVAL);
	EXPECT_EQ_INT(ks_parse_size("-1", &v), -EINVAL);
	EXPECT_EQ_INT(ks_parse_size("", &v), -EINVAL);
}

static bool cpu_set(const uint64_t *bits, unsigned int c)
{
	return bits[c / 64] >> (c % 64) & 1;
}

TEST(parse_cpulist)
{
	static const char *const bad[] = { "", ",", "a", "1-", "-1", "0-3x", "3-1", "1-2-3", "0,,1", "0,", " 0", "0 " };
	uint64_t bits[KS_MAX_CPUS / 64];
	int n = 0;

	ASSERT_EQ_INT(ks_parse_cpulist("0-3,6", bits, KS_MAX_CPUS), 0);
	for (unsigned int c = 0; c < KS_MAX_CPUS; c++)
		n += cpu_set(bits, c);
	EXPECT_EQ_INT(n, 5);
	EXPECT_TRUE(cpu_set(bits, 0) && cpu_set(bits, 1) && cpu_set(bits, 2) && cpu_set(bits, 3) && cpu_set(bits, 6));
	ASSERT_EQ_INT(ks_parse_cpulist("1023,64,63", bits, KS_MAX_CPUS), 0);
	EXPECT_TRUE(cpu_set(bits, 1023) && cpu_set(bits, 64) && cpu_set(bits, 63) && !cpu_set(bits, 0));
	ASSERT_EQ_INT(ks_parse_cpulist("5-5", bits, KS_MAX_CPUS), 0);
	EXPECT_TRUE(cpu_set(bits, 5) && !cpu_set(bits, 4) && !cpu_set(bits, 6));
	EXPECT_EQ_INT(ks_parse_cpulist("1024", bits, KS_MAX_CPUS), -ERANGE);
	EXPECT_EQ_INT(ks_parse_cpulist("0-99999999999999999999", bits, KS_MAX_CPUS), -ERANGE);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		t_check(ks_parse_cpulist(bad[i], bits, KS_MAX_CPUS) == -EINVAL, __FILE__, __LINE__, "'%s' accepted",
			bad[i]);
}

TEST(defaults)
{
	struct res *r = PARSE0(&spec);

	EXPECT_EQ_INT(r->rc, 1);
	EXPECT_EQ_STR(r->err, "");
	EXPECT_EQ_STR(r->out, "");
	EXPECT_TRUE(r->c.duration == 0 && r->c.interval == 0);
	EXPECT_EQ_INT(r->c.pid, 0);
	EXPECT_EQ_INT(r->c.tid, 0);
	EXPECT_TRUE(!r->c.cgroup && !r->c.has_cpus && !r->c.has_comm && !r->c.by && !r->c.json && !r->c.output);
	EXPECT_EQ_INT(r->c.top_n, 10);
	EXPECT_EQ_INT(r->ctx.calls, 0);
}

TEST(durations_with_units)
{
	struct res *r = PARSE(&spec, "-d", "250ms", "-i", "0.1");

	EXPECT_EQ_INT(r->rc, 3 + 2);
	EXPECT_NEAR(r->c.duration, 0.25, 1e-12);
	EXPECT_NEAR(r->c.interval, 0.1, 1e-12);
	r = PARSE(&spec, "--duration", "2m", "--interval=1h");
	EXPECT_EQ_INT(r->rc, 4);
	EXPECT_NEAR(r->c.duration, 120, 1e-12);
	EXPECT_NEAR(r->c.interval, 3600, 1e-12);
	r = PARSE(&spec, "-d5s");
	EXPECT_NEAR(r->c.duration, 5, 1e-12);
	/* the shortest interval */
	r = PARSE(&spec, "-i", "10ms");
	EXPECT_EQ_INT(r->rc, 3);
	EXPECT_NEAR(r->c.interval, 0.01, 1e-12);
}

/* "until Ctrl-C" is no -d, so -d 0 is refused like every non-positive duration */
TEST(duration_zero_rejected)
{
	EXPECT_REJECTED(PARSE(&spec, "-d", "0"), "invalid duration '0': expected a positive number of seconds (omit -d");
	EXPECT_REJECTED(PARSE(&spec, "-d", "0ms"), "invalid duration '0ms'");
}

/* below 10 ms the reports would be a busy loop (-i 1e-9 gave thousands a second) */
TEST(interval_too_short_rejected)
{
	EXPECT_REJECTED(PARSE(&spec, "-i", "1e-9"), "invalid interval '1e-9': expected at least 10ms");
	EXPECT_REJECTED(PARSE(&spec, "-i", "9ms"), "invalid interval '9ms'");
	EXPECT_REJECTED(PARSE(&spec, "-i", "5us"), "invalid interval '5us'");
}

/* an empty path would silently mean the root cgroup, every task */
TEST(empty_cgroup_rejected)
{
	EXPECT_REJECTED(PARSE(&spec, "-c", ""), "invalid cgroup ''");
}

/* user input echoed in an error stays on one line: control bytes are escaped */
TEST(errors_escape_control_bytes)
{
	struct res *r = PARSE(&spec, "-d", "1\n\x1b[2Jx");

	EXPECT_TRUE(r->rc < 0);
	EXPECT_EQ_STR(r->err, "ksight: error: invalid duration '1\\x0a\\x1b[2Jx': expected a positive number of seconds "
			      "(omit -d to run until Ctrl-C)\n");
	r = PARSE(&spec, "--by", "a\tb");
	EXPECT_TRUE(r->err && strstr(r->err, "'a\\x09b'") != NULL);
	r = PARSE(&spec, "--nope\r\x7f");
	EXPECT_TRUE(r->err && strstr(r->err, "'--nope\\x0d\\x7f'") != NULL);
	r = PARSE(&spec, "-\x01");
	EXPECT_TRUE(r->err && strstr(r->err, "unknown option '-\\x01'") != NULL);
}

TEST(duration_rejected)
{
	EXPECT_REJECTED(PARSE(&spec, "-d", "-1"), "invalid duration '-1'");
	EXPECT_REJECTED(PARSE(&spec, "-d", "10x"), "invalid duration '10x'");
	EXPECT_REJECTED(PARSE(&spec, "--duration=-5s"), "invalid duration '-5s'");
	EXPECT_REJECTED(PARSE(&spec, "-d", ""), "invalid duration ''");
}

TEST(interval_zero_rejected)
{
	EXPECT_REJECTED(PARSE(&spec, "-i", "0"), "invalid interval '0'");
	EXPECT_REJECTED(PARSE(&spec, "-i", "0ms"), "invalid interval '0ms'");
	EXPECT_REJECTED(PARSE(&spec, "-i", "-1"), "invalid interval '-1'");
}

TEST(pid_and_tid)
{
	static const char *const bad[] = { "0", "-5", "2147483648", "12a", "0x10", "", " 1", "+1" };
	struct res *r = PARSE(&spec, "-p", "1", "--tid", "2147483647");

	EXPECT_EQ_INT(r->rc, 5);
	EXPECT_EQ_INT(r->c.pid, 1);
	EXPECT_EQ_INT(r->c.tid, 2147483647);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char want[64];

		snprintf(want, sizeof(want), "invalid pid '%s'", bad[i]);
		EXPECT_REJECTED(PARSE(&spec, "-p", (char *)bad[i]), want);
		snprintf(want, sizeof(want), "invalid tid '%s'", bad[i]);
		EXPECT_REJECTED(PARSE(&spec, "-t", (char *)bad[i]), want);
	}
}

TEST(cpu_list_option)
{
	struct res *r = PARSE(&spec, "-C", "0-3,6");

	EXPECT_EQ_INT(r->rc, 3);
	EXPECT_TRUE(r->c.has_cpus);
	EXPECT_EQ_STR(r->c.cpus_arg, "0-3,6");
	EXPECT_EQ_U64(r->c.cpus[0], 0x4f);
	EXPECT_REJECTED(PARSE(&spec, "--cpu", "3-1"), "invalid CPU list '3-1'");
	EXPECT_REJECTED(PARSE(&spec, "-C", "0-3x"), "invalid CPU list '0-3x'");
	EXPECT_REJECTED(PARSE(&spec, "-C", "4096"), "invalid CPU list '4096'");
	EXPECT_REJECTED(PARSE(&spec, "-C", ""), "invalid CPU list ''");
}

TEST(comm_length)
{
	struct res *r = PARSE(&spec, "--comm", "fifteen-chars-x");

	EXPECT_EQ_INT(r->rc, 3);
	EXPECT_TRUE(r->c.has_comm);
	EXPECT_EQ_STR(r->c.comm, "fifteen-chars-x");
	r = PARSE(&spec, "--comm", "a");
	EXPECT_EQ_STR(r->c.comm, "a");
	/* the kernel compares all 16 bytes: the tail must be zero */
	for (int i = 1; i < KS_COMM_LEN; i++)
		EXPECT_EQ_INT(r->c.comm[i], 0);
	EXPECT_REJECTED(PARSE(&spec, "--comm", "sixteen-chars-xx"), "invalid comm 'sixteen-chars-xx'");
	EXPECT_REJECTED(PARSE(&spec, "--comm", ""), "expected 1 to 15 characters");
}

TEST(by_key_validation)
{
	struct res *r = PARSE(&spec, "--by", "pid");

	EXPECT_EQ_INT(r->rc, 3);
	EXPECT_EQ_STR(r->c.by, "pid");
	r = PARSE(&spec, "--by=comm");
	EXPECT_EQ_STR(r->c.by, "comm");
	EXPECT_REJECTED(PARSE(&spec, "--by", "nosuch"), "invalid --by key 'nosuch': expected one of syscall|pid|comm");
	/* whole words only */
	EXPECT_REJECTED(PARSE(&spec, "--by", "pi"), "invalid --by key 'pi'");
	EXPECT_REJECTED(PARSE(&spec, "--by", "pid|comm"), "invalid --by key 'pid|comm'");
	EXPECT_REJECTED(PARSE(&spec, "--by", ""), "invalid --by key ''");
	/* a command without --by does not take it at all */
	EXPECT_REJECTED(PARSE(&spec_min, "--by", "pid"), "unknown option '--by'");
}

TEST(top_json_output_verbose)
{
	struct res *r = PARSE(&spec, "-n", "0", "-j", "-o", "/tmp/x", "-vv");

	EXPECT_EQ_INT(r->rc, 7);
	EXPECT_EQ_INT(r->c.top_n, 0);
	EXPECT_TRUE(r->c.json && ks_json);
	EXPECT_EQ_STR(r->c.output, "/tmp/x");
	EXPECT_EQ_INT(ks_verbose, 2);
	r = PARSE(&spec, "--top", "1000000", "--json", "--output=out.json");
	EXPECT_EQ_INT(r->c.top_n, 1000000);
	EXPECT_EQ_STR(r->c.output, "out.json");
	EXPECT_REJECTED(PARSE(&spec, "-n", "1000001"), "invalid row count '1000001'");
	EXPECT_REJECTED(PARSE(&spec, "-n", "-1"), "invalid row count '-1'");
	ks_json = false;
	ks_verbose = 0;
}

TEST(unknown_option)
{
	EXPECT_REJECTED(PARSE(&spec, "--bogus"), "test: unknown option '--bogus'; see 'ksight test -h'");
	EXPECT_REJECTED(PARSE(&spec, "-x"), "test: unknown option '-x'");
	EXPECT_REJECTED(PARSE(&spec, "-Fx"), "unknown option '-x'");
	/* shared options the command does not take are unknown too */
	EXPECT_REJECTED(PARSE(&spec_min, "-p", "1"), "mini: unknown option '-p'");
	EXPECT_REJECTED(PARSE(&spec_min, "--pid=1"), "mini: unknown option '--pid=1'");
}

TEST(flag_given_an_argument)
{
	/* not "unknown option '-j'": the option exists, the argument is what is wrong */
	EXPECT_REJECTED(PARSE(&spec, "--json=1"), "option '--json=1' takes no argument");
	EXPECT_REJECTED(PARSE(&spec, "--flag=yes"), "option '--flag=yes' takes no argument");
}

TEST(missing_argument)
{
	EXPECT_REJECTED(PARSE(&spec, "-d"), "test: option '-d' needs an argument");
	EXPECT_REJECTED(PARSE(&spec, "-v", "--pid"), "option '--pid' needs an argument");
	EXPECT_REJECTED(PARSE(&spec, "--long-only"), "option '--long-only' needs an argument");
	EXPECT_REJECTED(PARSE(&spec, "-l"), "option '-l' needs an argument");
}

TEST(json_errors_on_stdout)
{
	struct res *r = PARSE(&spec, "-j", "-p", "x");

	EXPECT_EQ_INT(r->rc, -EINVAL);
	EXPECT_EQ_STR(r->out, "{\"error\":\"invalid pid 'x': expected a positive integer\"}\n");
	EXPECT_EQ_STR(r->err, "ksight: error: invalid pid 'x': expected a positive integer\n");
	ks_json = false;
}

#define HELP_HEAD "Usage: ksight test [OPTIONS] [ARG] [-- CMD [ARG...]]\n\nA command for the tests.\n\nOptions:\n"

TEST(help)
{
	struct res *r = PARSE(&spec, "-d", "1", "-h", "--bogus");

	EXPECT_EQ_INT(r->rc, KS_OPTS_HELP);
	EXPECT_EQ_STR(r->err, "");
	EXPECT_TRUE(!strncmp(r->out, HELP_HEAD, strlen(HELP_HEAD)));
	/* the command's own options first, then every shared one it takes, with --by's keys */
	EXPECT_TRUE(strstr(r->out, "  -F, --flag               a flag of the command\n") != NULL);
	/* a command that takes -- CMD says so last */
	EXPECT_TRUE(strstr(r->out, "  -- CMD [ARG...]          run CMD once attached") != NULL);
	EXPECT_TRUE(strstr(r->out, "  -l, --level N            a level from 1 to 3\n") != NULL);
	EXPECT_TRUE(strstr(r->out, "      --long-only WORD     an option with no short form\n") != NULL);
	EXPECT_TRUE(strstr(r->out, "      --by KEY             aggregate by KEY\n"
				   "                           KEY: syscall|pid|comm\n") != NULL);
	EXPECT_TRUE(strstr(r->out, "  -h, --help               show this help\n") != NULL);
	EXPECT_TRUE(strstr(r->out, "--flag") < strstr(r->out, "--duration"));
	r = PARSE(&spec_min, "--help");
	EXPECT_EQ_INT(r->rc, KS_OPTS_HELP);
	EXPECT_EQ_STR(r->out, "Usage: ksight mini [OPTIONS]\n\nMinimal.\n\nOptions:\n"
			      "  -d, --duration SEC       stop after SEC seconds, > 0 (units: ms, s, m, h); no -d: at Ctrl-C\n"
			      "  -v, --verbose            more messages (-vv: libbpf's too)\n"
			      "  -h, --help               show this help\n");
}

TEST(collector_options_via_callback)
{
	struct res *r = PARSE(&spec, "-F", "--level", "2", "--long-only", "word", "-p", "7");

	EXPECT_EQ_INT(r->rc, 8);
	EXPECT_EQ_INT(r->ctx.calls, 3);
	EXPECT_TRUE(r->ctx.flag);
	EXPECT_EQ_INT(r->ctx.level, 2);
	EXPECT_EQ_STR(r->ctx.word, "word");
	EXPECT_EQ_INT(r->c.pid, 7);
	r = PARSE(&spec, "-Fl3");
	EXPECT_EQ_INT(r->rc, 2);
	EXPECT_TRUE(r->ctx.flag);
	EXPECT_EQ_INT(r->ctx.level, 3);
	/* the callback's own error is the parse's error */
	EXPECT_REJECTED(PARSE(&spec, "-l", "9"), "invalid level '9'");
	/* a command with options but no callback rejects them instead of dropping them */
	{
		struct ks_common c;

		ks_common_init(&c);
		EXPECT_EQ_INT(ks_opts_parse(&spec, 2, ARGV("-F"), &c, NULL, NULL), -EINVAL);
	}
}

TEST(positional_arguments)
{
	/* parsing stops at the first positional argument: what follows is the command's */
	struct res *r = PARSE(&spec, "-d", "1", "pos", "-j");

	EXPECT_EQ_INT(r->rc, 3);
	EXPECT_TRUE(!r->c.json);
	/* a command that takes no -- CMD: "--" ends the options */
	r = PARSE(&spec_nocmd, "--", "-j");
	EXPECT_EQ_INT(r->rc, 2);
	EXPECT_TRUE(!r->c.json);
	r = PARSE(&spec_nocmd, "-p", "3", "--", "x");
	EXPECT_EQ_INT(r->rc, 4);
	EXPECT_TRUE(r->c.cmd_argv == NULL);
}

TEST(cmd_after_double_dash)
{
	/* what follows "--" is the command, its options its own; all of argv is parsed */
	struct res *r = PARSE(&spec, "-d", "1", "--", "ls", "-j");

	EXPECT_EQ_INT(r->rc, 6);
	EXPECT_TRUE(!r->c.json);
	EXPECT_TRUE(r->c.cmd_argv != NULL);
	EXPECT_EQ_STR(r->c.cmd_argv[0], "ls");
	EXPECT_EQ_STR(r->c.cmd_argv[1], "-j");
	EXPECT_TRUE(r->c.cmd_argv[2] == NULL);
	/* "--" as an option's argument is no separator */
	r = PARSE(&spec, "-o", "--", "x");
	EXPECT_EQ_INT(r->rc, 3);
	EXPECT_EQ_STR(r->c.output, "--");
	EXPECT_TRUE(r->c.cmd_argv == NULL);
	EXPECT_REJECTED(PARSE(&spec, "--"), "'--' needs a command after it");
	EXPECT_REJECTED(PARSE(&spec, "-p", "3", "--", "x"), "goes without -p");
	EXPECT_REJECTED(PARSE(&spec, "-t", "3", "--", "x"), "goes without -t");
	EXPECT_REJECTED(PARSE(&spec, "-c", "app", "--", "x"), "goes without -c");
}

/*
 * getopt keeps its place inside a cluster of short options between calls;
 * a parse that fails in the middle of "-xj" must not leak "j" into the
 * next parse (serve and top parse many times in one process).
 */
TEST(reparse_after_error_in_cluster)
{
	struct res *r = PARSE(&spec, "-xj");

	EXPECT_EQ_INT(r->rc, -EINVAL);
	r = PARSE0(&spec);
	EXPECT_EQ_INT(r->rc, 1);
	EXPECT_TRUE(!r->c.json && !ks_json);
	r = PARSE(&spec, "-l", "9", "-F");
	r = PARSE(&spec, "-vFl", "1");
	EXPECT_EQ_INT(r->rc, 3);
	EXPECT_EQ_INT(ks_verbose, 1);
	EXPECT_EQ_INT(r->ctx.level, 1);
	ks_verbose = 0;
	ks_json = false;
}

TEST(noargs_rejects_positional)
{
	struct ks_common c;
	struct t_capture ce;
	char *err;
	int rc;

	ks_common_init(&c);
	EXPECT_EQ_INT(ks_opts_parse_noargs(&spec_min, 3, ARGV("-d", "1"), &c, NULL, NULL), 0);
	t_capture_begin(&ce, STDERR_FILENO);
	rc = ks_opts_parse_noargs(&spec_min, 4, ARGV("-d", "1", "extra"), &c, NULL, NULL);
	err = t_capture_end(&ce);
	EXPECT_EQ_INT(rc, -EINVAL);
	EXPECT_EQ_STR(err, "ksight: error: mini: unexpected argument 'extra'; see 'ksight mini -h'\n");
	free(err);
	t_capture_begin(&ce, STDERR_FILENO);
	rc = ks_opts_parse_noargs(&spec_min, 2, ARGV("--bogus"), &c, NULL, NULL);
	err = t_capture_end(&ce);
	EXPECT_EQ_INT(rc, -EINVAL);
	EXPECT_EQ_INT(t_count_lines(err), 1);
	free(err);
	t_capture_begin(&ce, STDOUT_FILENO);
	rc = ks_opts_parse_noargs(&spec_min, 3, ARGV("-h", "extra"), &c, NULL, NULL);
	free(t_capture_end(&ce));
	EXPECT_EQ_INT(rc, KS_OPTS_HELP);
}
