/* Unit tests of the u64 counter cursors collectors save with serve --pin's totals (ks_cursor_get_u64/set). */
#include <errno.h>
#include <stdlib.h>
#include "test.h"
#include "core/bpfutil.h"

struct seen {
	uint64_t a, b, c;
};

TEST(cursor_round_trip)
{
	struct seen s = { 7, 1ull << 40, 0 }, t = { 0 };
	uint64_t *const from[] = { &s.a, &s.b, &s.c };
	uint64_t *const to[] = { &t.a, &t.b, &t.c };
	void *buf = NULL;
	size_t len = 0;

	ASSERT_EQ_INT(ks_cursor_get_u64(from, 3, &buf, &len), 0);
	EXPECT_EQ_INT(len, 4 * sizeof(uint64_t));
	EXPECT_EQ_INT(ks_cursor_set_u64(to, 3, buf, len), 0);
	EXPECT_EQ_U64(t.a, 7);
	EXPECT_EQ_U64(t.b, 1ull << 40);
	EXPECT_EQ_U64(t.c, 0);
	free(buf);
}

/* A cursor saved for other fields (another version's, a damaged copy) is refused, nothing changed. */
TEST(cursor_refuses_another_shape)
{
	struct seen s = { 1, 2, 3 }, t = { 9, 9, 9 };
	uint64_t *const from[] = { &s.a, &s.b };
	uint64_t *const to[] = { &t.a, &t.b, &t.c };
	void *buf = NULL;
	size_t len = 0;

	ASSERT_EQ_INT(ks_cursor_get_u64(from, 2, &buf, &len), 0);
	EXPECT_EQ_INT(ks_cursor_set_u64(to, 3, buf, len), -EBADMSG);
	EXPECT_EQ_INT(ks_cursor_set_u64(to, 2, buf, len - 1), -EBADMSG);
	/* right length, wrong count inside */
	((uint64_t *)buf)[0] = 5;
	EXPECT_EQ_INT(ks_cursor_set_u64(to, 2, buf, len), -EBADMSG);
	EXPECT_EQ_U64(t.a, 9);
	EXPECT_EQ_U64(t.c, 9);
	free(buf);
}
