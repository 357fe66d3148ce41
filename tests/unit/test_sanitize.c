/* Unit tests of the one sanitizer every output runs names through: invalid UTF-8 and control bytes as \xNN, one-to-one, cut between characters. */
#include <errno.h>
#include "test.h"
#include "core/parse.h"
#include "core/sanitize.h"
#include "output/prom.h"

/* @s sanitized into a fresh buffer large enough. */
static const char *san(const char *s)
{
	static char buf[256];

	ks_sanitize(s, buf, sizeof(buf));
	return buf;
}

/* True when @s is well-formed UTF-8 without C0/C1 controls or DEL. */
static bool clean(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		int n = *p < 0x80 ? 1 : ks_utf8_len(p);

		if (!n || *p < 0x20 || *p == 0x7f || (p[0] == 0xc2 && p[1] < 0xa0))
			return false;
		p += n;
	}
	return true;
}

TEST(valid_utf8_kept)
{
	/* 2-, 3- and 4-byte characters (é, €, 🔥, U+10FFFF) and printable ASCII pass unchanged */
	static const char *const ok[] = { "plain-name_1", "caf\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x94\xa5",
					  "\xf4\x8f\xbf\xbf", "a{b}c=\"d\"", "sp ace;semi" };

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		EXPECT_EQ_STR(san(ok[i]), ok[i]);
		EXPECT_EQ_INT((int)ks_sanitized_len(ok[i]), (int)strlen(ok[i]));
	}
}

TEST(invalid_sequences_escaped)
{
	static const struct { const char *in, *want; } cases[] = {
		{ "bad\xffname", "bad\\xffname" },
		{ "\xfe\xc0", "\\xfe\\xc0" },
		{ "\x80x", "\\x80x" },				/* a stray continuation byte */
		{ "\xc0\xaf", "\\xc0\\xaf" },			/* overlong '/' */
		{ "\xe0\x80\xaf", "\\xe0\\x80\\xaf" },		/* overlong 3-byte '/' */
		{ "\xf0\x80\x80\xaf", "\\xf0\\x80\\x80\\xaf" }, /* overlong 4-byte '/' */
		{ "\xed\xa0\x80", "\\xed\\xa0\\x80" },		/* a UTF-16 surrogate (U+D800) */
		{ "\xed\xbf\xbf", "\\xed\\xbf\\xbf" },		/* U+DFFF */
		{ "\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80" }, /* past U+10FFFF */
		{ "\xf5\x80", "\\xf5\\x80" },
		{ "ab\xc3", "ab\\xc3" },			/* cut after the lead byte */
		{ "\xe2\x82", "\\xe2\\x82" },			/* cut inside a 3-byte sequence */
		{ "\xe2\x82x\xe2\x82\xac", "\\xe2\\x82x\xe2\x82\xac" }, /* a good one after a cut one */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		EXPECT_EQ_STR(san(cases[i].in), cases[i].want);
		EXPECT_TRUE(clean(san(cases[i].in)));
	}
}

/* The kernel keeps 15 bytes of a comm: a name of 🔥 ends inside the fourth one. */
TEST(comm_cut_inside_4_byte_char)
{
	const char comm[16] = "\xf0\x9f\x94\xa5\xf0\x9f\x94\xa5\xf0\x9f\x94\xa5\xf0\x9f\x94";

	EXPECT_EQ_INT((int)strlen(comm), 15);
	EXPECT_EQ_STR(san(comm), "\xf0\x9f\x94\xa5\xf0\x9f\x94\xa5\xf0\x9f\x94\xa5\\xf0\\x9f\\x94");
	EXPECT_TRUE(clean(san(comm)));
}

TEST(control_bytes_and_backslash)
{
	static const struct { const char *in, *want; } cases[] = {
		{ "a\nb", "a\\x0ab" },
		{ "\r\t\x01\x1b[2J", "\\x0d\\x09\\x01\\x1b[2J" },
		{ "del\x7f", "del\\x7f" },
		{ "csi\xc2\x9b", "csi\\xc2\\x9b" }, /* a C1 control, well-formed but a terminal's CSI */
		{ "nbsp\xc2\xa0", "nbsp\xc2\xa0" }, /* the first character past the C1 range is kept */
		{ "back\\slash", "back\\\\slash" },
		{ "\"quoted\"", "\"quoted\"" },	/* quotes and braces are each format's business */
		{ "}{", "}{" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		EXPECT_EQ_STR(san(cases[i].in), cases[i].want);
		EXPECT_TRUE(clean(san(cases[i].in)));
	}
}

/* Two different names never show as one: a literal "\xff" is not the byte 0xff. */
TEST(one_to_one)
{
	char a[256];

	memcpy(a, san("x\\xff"), sizeof(a));
	EXPECT_EQ_STR(a, "x\\\\xff");
	EXPECT_TRUE(strcmp(a, san("x\xff")) != 0);
}

TEST(cut_between_pieces)
{
	char b[8];

	/* "ab" then an escape of 4 that does not fit in 5 bytes with the NUL */
	EXPECT_EQ_INT((int)ks_sanitize("ab\x1b", b, 5), 2);
	EXPECT_EQ_STR(b, "ab");
	/* never half of a 4-byte character */
	EXPECT_EQ_INT((int)ks_sanitize("a\xf0\x9f\x94\xa5", b, 5), 1);
	EXPECT_EQ_STR(b, "a");
	EXPECT_EQ_INT((int)ks_sanitize("abc", b, 0), 0);
	EXPECT_EQ_INT((int)ks_sanitize(NULL, b, sizeof(b)), 0);
	EXPECT_EQ_STR(b, "");
}

/* The writers built on it: quoting applied on top, per format. */
static const char *quote_x(char c)
{
	return c == '\\' ? "<bs>" : NULL;
}

TEST(put_quotes_the_result)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ASSERT_TRUE(f != NULL);
	ks_sanitize_put(f, "a\xff<&\"", quote_x);
	ks_sanitize_put(f, "|<&\">", ks_quote_xml);
	fclose(f);
	EXPECT_EQ_STR(buf, "a<bs>xff<&\"|&lt;&amp;&quot;&gt;");
	free(buf);
}

/* Error messages: the same rule, cut with "..." between characters. */
TEST(escape_for_messages)
{
	char buf[8];

	EXPECT_EQ_STR(ks_escape("a\nb", buf, sizeof(buf)), "a\\x0ab");
	EXPECT_EQ_STR(ks_escape("abcdefghij", buf, sizeof(buf)), "abcd...");
	EXPECT_EQ_STR(ks_escape("abc\xc3\xa9xyz", buf, sizeof(buf)), "abc...");
	EXPECT_EQ_STR(ks_escape("\xff\xff", buf, sizeof(buf)), "\\xff...");
	EXPECT_EQ_STR(ks_escape("", buf, sizeof(buf)), "");
}

/* Prometheus label values hold the sanitized text, cut between characters to fit. */
TEST(prom_label_values)
{
	struct prom_sample s;
	char long_name[200];

	memset(&s, 0, sizeof(s));
	EXPECT_EQ_INT(prom_label(&s, "comm", "bad\xffname\n}\"\\"), 0);
	EXPECT_EQ_STR(s.labels[0].value, "bad\\xffname\\x0a}\"\\\\");
	memset(long_name, 0, sizeof(long_name));
	for (int i = 0; i + 4 < (int)sizeof(long_name); i += 4)
		memcpy(long_name + i, "\xf0\x9f\x94\xa5", 4);
	EXPECT_EQ_INT(prom_label(&s, "path", long_name), 0);
	EXPECT_TRUE(clean(s.labels[1].value));
	EXPECT_EQ_INT((int)strlen(s.labels[1].value) % 4, 0);
	prom_sample_free(&s);
}

/* ks_unsanitize reads the bytes back from the sanitized text (a recording's JSON): the round trip is exact. */
TEST(unsanitize_round_trip)
{
	static const char *const names[] = { "h\xff\"q\\b\x1b" "e", "bad\xffname\n}", "c1\xc2\x9b", "fire\xf0\x9f\x94\xa5", "plain", "" };
	char san[256], back[256];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		ks_sanitize(names[i], san, sizeof(san));
		EXPECT_EQ_INT(ks_unsanitize(san, back, sizeof(back)), (int)strlen(names[i]));
		EXPECT_EQ_STR(back, names[i]);
	}
	/* what no sanitizer writes stays as it is: a lone backslash, \x00, \x with no hex */
	EXPECT_EQ_INT(ks_unsanitize("a\\x00b\\qc\\xzz\\", back, sizeof(back)), 14);
	EXPECT_EQ_STR(back, "a\\x00b\\qc\\xzz\\");
	EXPECT_EQ_INT(ks_unsanitize("abcd", back, 4), -ENOSPC);
	EXPECT_EQ_INT(ks_unsanitize("abc", back, 4), 3);
}
