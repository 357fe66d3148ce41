/* Unit tests of format/anon.c: SipHash-2-4 against the paper's vectors, and tokens that are stable, keyed and fit a comm. */
#include "test.h"
#include "format/anon.h"

/* key 00 01 .. 0f; Aumasson and Bernstein, "SipHash: a fast short-input PRF", appendix A */
TEST(siphash_reference_vectors)
{
	uint64_t k0 = 0x0706050403020100ull, k1 = 0x0f0e0d0c0b0a0908ull;
	unsigned char m[15];

	for (int i = 0; i < 15; i++)
		m[i] = (unsigned char)i;
	EXPECT_EQ_U64(ks_siphash(k0, k1, m, 15), 0xa129ca6149be45e5ull);
	EXPECT_EQ_U64(ks_siphash(k0, k1, m, 0), 0x726fdb47dd0e0e31ull);
}

TEST(tokens_stable_keyed_and_sized)
{
	struct ks_anon a, b, r;
	char t1[32], t2[32], t3[32], t4[32], c[16];

	ASSERT_EQ_INT(ks_anon_init(&a, "key one"), 0);
	ASSERT_EQ_INT(ks_anon_init(&b, "key two"), 0);
	ASSERT_EQ_INT(ks_anon_init(&r, NULL), 0);
	ks_anon_token(&a, 'p', "/home/alice/x", 13, t1, sizeof(t1));
	ks_anon_token(&a, 'p', "/home/alice/x", 13, t2, sizeof(t2));
	ks_anon_token(&b, 'p', "/home/alice/x", 13, t3, sizeof(t3));
	ks_anon_token(&a, 'c', "/home/alice/x", 13, t4, sizeof(t4));
	EXPECT_EQ_STR(t1, t2);
	EXPECT_TRUE(strcmp(t1, t3) != 0);
	EXPECT_TRUE(strcmp(t1, t4) != 0); /* the kind is part of the input */
	EXPECT_TRUE(!strncmp(t1, "path-", 5) && strlen(t1) == 21);
	/* a comm token is whole in a comm (15 characters and the NUL) */
	ks_anon_token(&r, 'c', "sshd", 4, c, sizeof(c));
	EXPECT_TRUE(!strncmp(c, "c-", 2) && strlen(c) == 14);
	ks_anon_free(&a);
	ks_anon_free(&b);
	ks_anon_free(&r);
}
