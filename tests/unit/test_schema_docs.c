/* docs/json.md's column tables are the collectors' declared schemas, rendered (ks_schema_write_md): the docs cannot drift from the code. */
#include "core/collector.h"
#include "output/output.h"
#include "test.h"

/* The file's text, NUL-terminated; NULL when unreadable. */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0;
	FILE *m;
	int c;

	if (!f)
		return NULL;
	m = open_memstream(&buf, &len);
	while (m && (c = getc(f)) != EOF)
		putc(c, m);
	if (m)
		fclose(m);
	fclose(f);
	return buf;
}

/*
 * The rendered table of collector @name must follow the line
 * "<!-- schema: NAME -->" in docs/json.md; on a mismatch the table to
 * paste there goes to stderr.
 */
static void check_docs(const char *name)
{
	const struct ks_collector *col = ks_collector_find(name);
	char marker[64], *docs, *want = NULL, *at;
	size_t len = 0;
	FILE *m;

	ASSERT_TRUE(col != NULL);
	ASSERT_TRUE(col->schema != NULL);
	m = open_memstream(&want, &len);
	ASSERT_TRUE(m != NULL);
	EXPECT_EQ_INT(ks_schema_write_md(col->schema, m), 0);
	fclose(m);
	docs = slurp("docs/json.md");
	if (!EXPECT_TRUE(docs != NULL)) {
		free(want);
		return;
	}
	snprintf(marker, sizeof(marker), "<!-- schema: %s -->\n", name);
	at = strstr(docs, marker);
	if (EXPECT_TRUE(at != NULL) && !EXPECT_TRUE(!strncmp(at + strlen(marker), want, strlen(want))))
		fprintf(stderr, "docs/json.md, after %s", marker);
	if (!at || strncmp(at + strlen(marker), want, strlen(want)))
		fprintf(stderr, "%s%s", marker, want);
	free(docs);
	free(want);
}

TEST(runqlat_docs_table_is_its_schema)
{
	check_docs("runqlat");
}

TEST(offcpu_docs_table_is_its_schema)
{
	check_docs("offcpu");
}

TEST(wall_docs_table_is_its_schema)
{
	check_docs("wall");
}

TEST(mem_docs_table_is_its_schema)
{
	check_docs("mem");
}

TEST(tcp_docs_table_is_its_schema)
{
	check_docs("tcp");
}

TEST(net_docs_table_is_its_schema)
{
	check_docs("net");
}

TEST(netflow_docs_table_is_its_schema)
{
	check_docs("netflow");
}

TEST(funclat_docs_table_is_its_schema)
{
	check_docs("funclat");
}

TEST(syscalls_docs_table_is_its_schema)
{
	check_docs("syscalls");
}

TEST(biolat_docs_table_is_its_schema)
{
	check_docs("biolat");
}

/* Every collector declares its columns, and the sort-key check follows them (and refuses what none has). */
TEST(sort_keys_follow_the_schema)
{
	static const char *const names[] = { "syscalls", "biolat", "runqlat", "offcpu", "mem", "tcp", "funclat" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const struct ks_schema *s = ks_collector_find(names[i])->schema;

		ASSERT_TRUE(s != NULL);
		EXPECT_TRUE(ks_schema_sort_key(s, "p99"));
		EXPECT_TRUE(ks_schema_sort_key(s, "count"));
		EXPECT_TRUE(ks_schema_sort_key(s, s->cols[0].name));
		EXPECT_TRUE(!ks_schema_sort_key(s, "bogus"));
		EXPECT_TRUE(s->keys && s->keys[0]);
	}
	EXPECT_TRUE(ks_schema_sort_key(ks_collector_find("syscalls")->schema, "total"));
	EXPECT_TRUE(ks_schema_sort_key(ks_collector_find("syscalls")->schema, "syscall"));
	EXPECT_TRUE(ks_schema_sort_key(ks_collector_find("biolat")->schema, "disk"));
	EXPECT_TRUE(ks_schema_sort_key(ks_collector_find("biolat")->schema, "queue_p99"));
	EXPECT_TRUE(ks_schema_sort_key(ks_collector_find("offcpu")->schema, "state"));
	EXPECT_TRUE(!ks_schema_sort_key(ks_collector_find("runqlat")->schema, "state"));
	EXPECT_TRUE(ks_schema_sort_key(NULL, "anything"));
}

/* Every column has a help line, and names are unique within a collector (a JSON object's members). */
TEST(declared_columns_are_complete)
{
	static const char *const names[] = { "syscalls", "biolat", "runqlat", "offcpu", "mem", "tcp", "funclat" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const struct ks_schema *s = ks_collector_find(names[i])->schema;

		ASSERT_TRUE(s != NULL);
		EXPECT_TRUE(s->hist_name != NULL && s->hist_help != NULL);
		for (const struct ks_column *c = s->cols; c->name; c++) {
			EXPECT_TRUE(c->help && *c->help);
			for (const struct ks_column *d = c + 1; d->name; d++)
				EXPECT_TRUE(strcmp(c->name, d->name) != 0);
		}
	}
}
