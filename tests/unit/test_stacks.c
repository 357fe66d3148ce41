/* Unit tests of the stack profile model and its writers: folded text, the SVG flame graph, pprof decoded back from gzip'd protobuf, profile's JSON; the profile's blob table. */
#include <zlib.h>
#include "test.h"
#include "core/hash.h"
#include "output/output.h"
#include "output/profile.h"
#include "output/stacks.h"
#include "profile/blobs.h"

static char *render(const struct ks_stacks *st, int (*w)(const struct ks_stacks *, FILE *), size_t *len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&buf, &n);

	if (!m)
		return NULL;
	if (w(st, m)) {
		fclose(m);
		free(buf);
		return NULL;
	}
	fclose(m);
	if (len)
		*len = n;
	return buf;
}

/* A stack of names (NULL-terminated), the first the comm; "k:" marks kernel frames. */
static void add(struct ks_stacks *st, uint64_t v, const char *const *names)
{
	uint32_t f[32], n = 0;

	for (; names[n]; n++) {
		bool k = !strncmp(names[n], "k:", 2);
		int64_t id = ks_stacks_frame(st, k ? names[n] + 2 : names[n], n == 0 ? KS_FK_COMM : k ? KS_FK_KERNEL : KS_FK_USER);

		f[n] = (uint32_t)id;
	}
	ks_stacks_add(st, f, n, v);
}

static void sample_profile(struct ks_stacks *st)
{
	ks_stacks_init(st, "samples", "count", 10000000);
	add(st, 5, (const char *const[]){ "app", "main", "qsort", "cmp", "hot_spin", NULL });
	add(st, 2, (const char *const[]){ "app", "main", "cold_spin", NULL });
	add(st, 3, (const char *const[]){ "app", "main", "qsort", "cmp", "hot_spin", NULL });
	add(st, 1, (const char *const[]){ "app", "main", "read", "k:ksys_read", "k:vfs_read", NULL });
	add(st, 1, (const char *const[]){ "sh", "a;b", NULL });
	ks_stacks_sort(st);
}

/* profile's JSON from a hand-made result: the run as asked, the losses, the unwinding, the budget, the stacks */
TEST(profile_json_whole_result)
{
	struct ks_profile_result res = { .event = "cpu-clock", .duration_s = 0.5, .unwound = 4, .user_frames = 10,
					 .unwind_ns = 800 };
	struct ks_profile_json_opts o = { .collector = "offcpu", .hz = 49, .dwarf = true, .offcpu = true };
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	ASSERT_TRUE(m);
	sample_profile(&res.st);
	res.stats.samples = 12;
	res.stats.ring_lost = 3;
	res.stats.off_unseen_in = 2;
	res.stats.off_inferred_in = 7;
	ks_budget_init(&res.budget, 1 << 20);
	res.budget.ncpus = 4; /* not this machine's */
	EXPECT_EQ_INT(ks_write_profile_json(&res, &o, m), 0);
	fclose(m);
	ASSERT_TRUE(buf);
	/* the field order is the one profile -j always wrote (docs/json.md) */
	EXPECT_EQ_STR(buf, "{\"collector\":\"offcpu\",\"unit\":\"count\",\"event\":\"cpu-clock\",\"frequency_hz\":49,"
			   "\"call_graph\":\"dwarf\",\"duration_s\":0.5,\"samples\":12,\"kernel_symbols_hidden\":false,"
			   "\"lost\":{\"kernel_stacks\":0,\"user_stacks\":0,\"counts_full\":0,\"ring_full\":3,"
			   "\"user_stack_unreadable\":0,\"map_errors\":0,\"unseen_switch_in\":2},\"inferred_switch_in\":7,"
			   "\"unwind\":{\"samples\":4,\"mean_user_depth\":2.5,\"user_ns_per_sample\":200},"
			   "\"maps\":{\"budget\":1048576,\"possible_cpus\":4,\"total\":0,\"allocated\":0,\"by_map\":[]},"
			   "\"stacks\":[{\"count\":2,\"frames\":[{\"name\":\"app\",\"kind\":\"comm\"},{\"name\":\"main\",\"kind\":\"user\"},"
			   "{\"name\":\"cold_spin\",\"kind\":\"user\"}]},{\"count\":8,\"frames\":[{\"name\":\"app\",\"kind\":\"comm\"},"
			   "{\"name\":\"main\",\"kind\":\"user\"},{\"name\":\"qsort\",\"kind\":\"user\"},{\"name\":\"cmp\",\"kind\":\"user\"},"
			   "{\"name\":\"hot_spin\",\"kind\":\"user\"}]},{\"count\":1,\"frames\":[{\"name\":\"app\",\"kind\":\"comm\"},"
			   "{\"name\":\"main\",\"kind\":\"user\"},{\"name\":\"read\",\"kind\":\"user\"},"
			   "{\"name\":\"ksys_read\",\"kind\":\"kernel\"},{\"name\":\"vfs_read\",\"kind\":\"kernel\"}]},"
			   "{\"count\":1,\"frames\":[{\"name\":\"sh\",\"kind\":\"comm\"},{\"name\":\"a;b\",\"kind\":\"user\"}]}]}\n");
	free(buf);
	ks_stacks_free(&res.st);
}

TEST(folded_merges_sorts_and_marks_kernel)
{
	struct ks_stacks st;
	char *out;

	sample_profile(&st);
	EXPECT_EQ_U64(st.n, 4);
	EXPECT_EQ_U64(st.total, 12);
	out = render(&st, ks_write_folded, NULL);
	ASSERT_TRUE(out);
	EXPECT_EQ_STR(out, "app;main;cold_spin 2\n"
			   "app;main;qsort;cmp;hot_spin 8\n"
			   "app;main;read;ksys_read_[k];vfs_read_[k] 1\n"
			   "sh;a:b 1\n");
	free(out);
	ks_stacks_free(&st);
}

TEST(frames_interned_by_name_and_kind)
{
	struct ks_stacks st;

	ks_stacks_init(&st, "samples", "count", 0);
	EXPECT_EQ_INT(ks_stacks_frame(&st, "f", KS_FK_USER), 0);
	EXPECT_EQ_INT(ks_stacks_frame(&st, "f", KS_FK_KERNEL), 1);
	EXPECT_EQ_INT(ks_stacks_frame(&st, "f", KS_FK_USER), 0);
	/* many frames and stacks: the hash tables grow and keep every entry */
	for (int i = 0; i < 5000; i++) {
		char name[16];
		uint32_t f[2];

		snprintf(name, sizeof(name), "fn%d", i);
		f[0] = 0;
		f[1] = (uint32_t)ks_stacks_frame(&st, name, KS_FK_USER);
		ks_stacks_add(&st, f, 2, 1);
		ks_stacks_add(&st, f, 2, 1);
	}
	EXPECT_EQ_U64(st.nnames, 5002);
	EXPECT_EQ_U64(st.n, 5000);
	EXPECT_EQ_U64(st.total, 10000);
	ks_stacks_free(&st);
}

static int count_of(const char *s, const char *needle)
{
	int n = 0;

	for (const char *p = s; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

TEST(svg_one_rect_per_tree_node_and_escaped)
{
	struct ks_stacks st;
	char *out;

	sample_profile(&st);
	ks_stacks_add(&st, (uint32_t[]){ 0, (uint32_t)ks_stacks_frame(&st, "x<y>&\"z\"", KS_FK_USER) }, 2, 1);
	ks_stacks_sort(&st);
	out = render(&st, ks_write_svg, NULL);
	ASSERT_TRUE(out);
	/* app, main, qsort, cmp, hot_spin, cold_spin, read, ksys_read, vfs_read, x<y>..., sh, a:b */
	EXPECT_EQ_INT(count_of(out, "<g class=\"f\""), 12);
	EXPECT_TRUE(strstr(out, "data-n=\"x&lt;y&gt;&amp;&quot;z&quot;\""));
	EXPECT_TRUE(!strstr(out, "x<y"));
	/* app holds 12 of 13 samples, hot_spin 8: a profile's counts are samples */
	EXPECT_TRUE(strstr(out, "<title>app (12 samples, 92.31%)</title>"));
	EXPECT_TRUE(strstr(out, "<title>hot_spin (8 samples, 61.54%)</title>"));
	EXPECT_TRUE(strstr(out, "<title>ksys_read_[k] (1 samples"));
	EXPECT_TRUE(strstr(out, "Flame graph (13 samples)"));
	EXPECT_TRUE(!strstr(out, " count,") && !strstr(out, " count)") && !strstr(out, "prompt("));
	/* labels written as text, fitted to the frame's width (1200 px * 8/13 fits all; 1/13 = 92 px: 12 characters) */
	EXPECT_TRUE(strstr(out, ">hot_spin</text></g>"));
	EXPECT_TRUE(strstr(out, ">ksys_read_[k]</text></g>") == NULL);
	EXPECT_TRUE(strstr(out, ">ksys_read_..</text></g>"));
	/* escaped in the label as in the attribute */
	EXPECT_TRUE(strstr(out, ">x&lt;y&gt;&amp;&quot;z&quot;</text></g>"));
	EXPECT_TRUE(strstr(out, "</svg>\n"));
	free(out);
	ks_stacks_free(&st);
}

/* a comm with byte 0xff and a backslash is escaped once (core/sanitize.h's rule), then quoted for XML: \xff and \\ */
TEST(svg_names_sanitized_once)
{
	struct ks_stacks st;
	char *out;

	ks_stacks_init(&st, "samples", "count", 10000000);
	add(&st, 1, (const char *const[]){ "a\xff\\b<", "main", NULL });
	ks_stacks_sort(&st);
	out = render(&st, ks_write_svg, NULL);
	ASSERT_TRUE(out);
	EXPECT_TRUE(strstr(out, "data-n=\"a\\xff\\\\b&lt;\""));
	EXPECT_TRUE(strstr(out, "<title>a\\xff\\\\b&lt; (1 samples"));
	EXPECT_TRUE(strstr(out, ">a\\xff\\\\b&lt;</text></g>"));
	EXPECT_TRUE(!strstr(out, "\\\\xff") && !strstr(out, "\\\\\\"));
	free(out);
	ks_stacks_free(&st);
}

/* a name of multi-byte characters too long for its frame is cut at a character: 92 px of 1200 holds 12, 10 and ".." */
TEST(svg_labels_cut_at_a_character)
{
	struct ks_stacks st;
	char *out;

	ks_stacks_init(&st, "samples", "count", 10000000);
	add(&st, 12, (const char *const[]){ "app", "main", NULL });
	add(&st, 1, (const char *const[]){ "\xe6\xbc\xa2\xe5\xad\x97\xe6\xbc\xa2\xe5\xad\x97\xe6\xbc\xa2\xe5\xad\x97\xe6\xbc\xa2\xe5\xad\x97"
					     "\xe6\xbc\xa2\xe5\xad\x97\xe6\xbc\xa2\xe5\xad\x97\xe6\xbc\xa2\xe5\xad\x97", "main", NULL });
	ks_stacks_sort(&st);
	out = render(&st, ks_write_svg, NULL);
	ASSERT_TRUE(out);
	/* 漢字 x 5 = ten characters, then ".." */
	EXPECT_TRUE(strstr(out, ">\xe6\xbc\xa2\xe5\xad\x97\xe6\xbc\xa2\xe5\xad\x97\xe6\xbc\xa2\xe5\xad\x97\xe6\xbc\xa2\xe5\xad\x97"
			      "\xe6\xbc\xa2\xe5\xad\x97..</text></g>"));
	EXPECT_TRUE(!strstr(out, "\\x"));
	free(out);
	ks_stacks_free(&st);
}

static int write_no_script(const struct ks_stacks *st, FILE *out)
{
	return ks_write_svg_opt(st, out, &(struct ks_svg_opts){ .no_script = 1 });
}

/* for a page without script: the graph and its labels, no script and no control that needs one */
TEST(svg_no_script_leaves_out_the_controls)
{
	struct ks_stacks st;
	char *out, *all;

	sample_profile(&st);
	ks_stacks_sort(&st);
	out = render(&st, write_no_script, NULL);
	all = render(&st, ks_write_svg, NULL);
	ASSERT_TRUE(out && all);
	EXPECT_TRUE(strstr(all, "<script") && strstr(all, ">Reset zoom<") && strstr(all, ">Search (/)<"));
	EXPECT_TRUE(!strstr(out, "<script") && !strstr(out, "Reset zoom") && !strstr(out, "Search") &&
		    !strstr(out, "id=\"sbox\"") && !strstr(out, "id=\"matched\""));
	EXPECT_TRUE(strstr(out, "Flame graph (12 samples)") && strstr(out, ">hot_spin</text></g>"));
	EXPECT_EQ_INT(count_of(out, "<g class=\"f\""), count_of(all, "<g class=\"f\""));
	free(out);
	free(all);
	ks_stacks_free(&st);
}

/* A minimal protobuf reader for the checks below. */
struct rd {
	const uint8_t *p, *end;
};

static uint64_t rd_varint(struct rd *r)
{
	uint64_t v = 0;

	for (int s = 0; r->p < r->end && s < 64; s += 7) {
		uint8_t b = *r->p++;

		v |= (uint64_t)(b & 0x7f) << s;
		if (!(b & 0x80))
			break;
	}
	return v;
}

/* The next field: its number, and for length-delimited ones the sub-reader; varint values in *v. */
static int rd_field(struct rd *r, struct rd *sub, uint64_t *v)
{
	uint64_t tag, len;

	if (r->p >= r->end)
		return 0;
	tag = rd_varint(r);
	if ((tag & 7) == 0) {
		*v = rd_varint(r);
	} else {
		len = rd_varint(r);
		sub->p = r->p;
		sub->end = r->p + len;
		r->p += len;
	}
	return (int)(tag >> 3);
}

/* The gzip'd @gz inflated into @raw (@cap bytes): its length, or 0 unless one whole gzip stream that fits. */
static size_t gunzip(const char *gz, size_t len, uint8_t *raw, size_t cap)
{
	z_stream z = { 0 };
	size_t n = 0;

	if (inflateInit2(&z, 15 + 16) != Z_OK)
		return 0;
	z.next_in = (uint8_t *)gz;
	z.avail_in = len;
	z.next_out = raw;
	z.avail_out = cap;
	if (inflate(&z, Z_FINISH) == Z_STREAM_END)
		n = z.total_out;
	inflateEnd(&z);
	return n;
}

TEST(pprof_decodes_to_the_same_profile)
{
	struct ks_stacks st;
	uint8_t raw[65536];
	char *strs[64] = { 0 }, *out;
	uint64_t fn_name[64] = { 0 }, loc_fn[64] = { 0 }, v;
	uint64_t leaf_total[64] = { 0 }, nsamples = 0, sum = 0, sum_ns = 0, period = 0;
	int nstr = 0, field;
	size_t len, rawlen;
	struct rd r, sub, sub2;

	sample_profile(&st);
	out = render(&st, ks_write_pprof, &len);
	ASSERT_TRUE(out && len > 18);
	/* gzip magic, then inflate */
	EXPECT_TRUE((uint8_t)out[0] == 0x1f && (uint8_t)out[1] == 0x8b);
	rawlen = gunzip(out, len, raw, sizeof(raw));
	ASSERT_TRUE(rawlen > 0);
	/* first pass: strings, locations -> functions, functions -> names */
	r = (struct rd){ raw, raw + rawlen };
	while ((field = rd_field(&r, &sub, &v))) {
		uint64_t id = 0, x = 0;

		if (field == 6 && nstr < 64)
			strs[nstr++] = strndup((const char *)sub.p, sub.end - sub.p);
		if (field == 12)
			period = v;
		if (field == 4) {
			int f;

			while ((f = rd_field(&sub, &sub2, &x))) {
				if (f == 1)
					id = x;
				if (f == 4) {
					struct rd l = sub2, dummy;

					while (rd_field(&l, &dummy, &x) == 1 && id < 64)
						loc_fn[id] = x;
				}
			}
		}
		if (field == 5) {
			int f;

			while ((f = rd_field(&sub, &sub2, &x))) {
				if (f == 1)
					id = x;
				if (f == 2 && id < 64)
					fn_name[id] = x;
			}
		}
	}
	EXPECT_EQ_STR(strs[0], "");
	EXPECT_EQ_U64(period, 10000000);
	/* second pass: samples, leaf first; value[0] count, value[1] ns */
	r = (struct rd){ raw, raw + rawlen };
	while ((field = rd_field(&r, &sub, &v))) {
		uint64_t leaf = 0, vals[2] = { 0 };
		int f;

		if (field != 2)
			continue;
		nsamples++;
		while ((f = rd_field(&sub, &sub2, &v))) {
			if (f == 1)
				leaf = rd_varint(&sub2);
			if (f == 2) {
				vals[0] = rd_varint(&sub2);
				vals[1] = rd_varint(&sub2);
			}
		}
		sum += vals[0];
		sum_ns += vals[1];
		if (leaf < 64 && loc_fn[leaf] < 64)
			leaf_total[fn_name[loc_fn[leaf]]] += vals[0];
	}
	EXPECT_EQ_U64(nsamples, 4);
	EXPECT_EQ_U64(sum, 12);
	EXPECT_EQ_U64(sum_ns, 12 * 10000000ull);
	for (int i = 0; i < nstr; i++) {
		if (!strcmp(strs[i], "hot_spin"))
			EXPECT_EQ_U64(leaf_total[i], 8);
		if (!strcmp(strs[i], "vfs_read"))
			EXPECT_EQ_U64(leaf_total[i], 1);
	}
	for (int i = 0; i < nstr; i++)
		free(strs[i]);
	free(out);
	ks_stacks_free(&st);
}

/* The address view: mappings, locations and samples interned; pprof writes them with addresses, lines, labels and times. */
TEST(pprof_address_view)
{
	struct ks_smapping m = { 0x400000, 0x401000, 0x1000, "/bin/w", "c0ffee" };
	struct ks_stacks st;
	static uint8_t raw[65536];
	char *strs[64] = { 0 }, *out;
	uint64_t v, mapv[7] = { 0 }, locv[4] = { 0 }, lines[4] = { 0 }, nlines = 0, tn = 0, dn = 0, pidk = 0, pidv = 0;
	uint32_t fa, fb, loc[2];
	int64_t mi, l0, l1;
	int nstr = 0, field;
	size_t len, rawlen;
	struct rd r, sub, sub2, sub3;

	ks_stacks_init(&st, "samples", "count", 1000000);
	ASSERT_EQ_INT(ks_stacks_by_address(&st), 0);
	st.time_ns = 1700000000000000000ull;
	st.duration_ns = 2000000000ull;
	fa = (uint32_t)ks_stacks_frame(&st, "inner", KS_FK_INLINE);
	fb = (uint32_t)ks_stacks_frame(&st, "outer", KS_FK_USER);
	mi = ks_stacks_mapping(&st, &m);
	EXPECT_EQ_INT(mi, 1);
	EXPECT_EQ_INT(ks_stacks_mapping(&st, &m), 1);
	l0 = ks_stacks_location(&st, 1, 0x401234,
				(struct ks_sline[]){ { fa, 12, "/src/w.c" }, { fb, 30, "/src/w.c" } }, 2);
	l1 = ks_stacks_location(&st, 0, 0, (struct ks_sline[]){ { fb, 0, NULL } }, 1);
	EXPECT_EQ_INT(l0, 0);
	EXPECT_EQ_INT(l1, 1);
	EXPECT_EQ_INT(ks_stacks_location(&st, 1, 0x401234,
					 (struct ks_sline[]){ { fa, 12, "/src/w.c" }, { fb, 30, "/src/w.c" } }, 2), 0);
	loc[0] = (uint32_t)l1;
	loc[1] = (uint32_t)l0;
	ks_stacks_add_sample(&st, loc, 2, 42, 43, 0, 3);
	ks_stacks_add_sample(&st, loc, 2, 42, 43, 0, 4);
	EXPECT_EQ_U64(st.av->n, 1);
	EXPECT_EQ_U64(st.av->s[0].value, 7);
	out = render(&st, ks_write_pprof, &len);
	ASSERT_TRUE(out);
	rawlen = gunzip(out, len, raw, sizeof(raw));
	ASSERT_TRUE(rawlen > 0);
	r = (struct rd){ raw, raw + rawlen };
	while ((field = rd_field(&r, &sub, &v))) {
		uint64_t x;
		int f;

		if (field == 6 && nstr < 64)
			strs[nstr++] = strndup((const char *)sub.p, sub.end - sub.p);
		if (field == 9)
			tn = v;
		if (field == 10)
			dn = v;
		if (field == 3) /* Mapping: id, start, limit, offset, filename, build_id */
			while ((f = rd_field(&sub, &sub2, &x)))
				if (f <= 6)
					mapv[f] = x;
		if (field == 4) { /* Location: id, mapping_id, address, lines */
			uint64_t id = 0, l[4] = { 0 };

			while ((f = rd_field(&sub, &sub2, &x))) {
				if (f <= 3)
					l[f] = x;
				if (f == 1)
					id = x;
				if (f == 4 && id == 1 && nlines < 2) {
					int g;

					while ((g = rd_field(&sub2, &sub3, &x)))
						if (g == 2)
							lines[nlines] = x;
					nlines++;
				}
			}
			if (id == 1)
				memcpy(locv, l, sizeof(l));
		}
		if (field == 2) /* Sample: the first label's key and number */
			while ((f = rd_field(&sub, &sub2, &x)))
				if (f == 3 && !pidk) {
					int g;

					while ((g = rd_field(&sub2, &sub3, &x))) {
						if (g == 1)
							pidk = x;
						if (g == 3)
							pidv = x;
					}
				}
	}
	EXPECT_EQ_U64(mapv[1], 1);
	EXPECT_EQ_U64(mapv[2], 0x400000);
	EXPECT_EQ_U64(mapv[3], 0x401000);
	EXPECT_EQ_U64(mapv[4], 0x1000);
	ASSERT_TRUE(mapv[5] < (uint64_t)nstr && mapv[6] < (uint64_t)nstr);
	EXPECT_EQ_STR(strs[mapv[5]], "/bin/w");
	EXPECT_EQ_STR(strs[mapv[6]], "c0ffee");
	EXPECT_EQ_U64(locv[2], 1);
	EXPECT_EQ_U64(locv[3], 0x401234);
	EXPECT_EQ_U64(nlines, 2);
	EXPECT_EQ_U64(lines[0], 12);
	EXPECT_EQ_U64(lines[1], 30);
	EXPECT_EQ_U64(tn, 1700000000000000000ull);
	EXPECT_EQ_U64(dn, 2000000000ull);
	ASSERT_TRUE(pidk < (uint64_t)nstr);
	EXPECT_EQ_STR(strs[pidk], "pid");
	EXPECT_EQ_U64(pidv, 42);
	for (int i = 0; i < nstr; i++)
		free(strs[i]);
	free(out);
	ks_stacks_free(&st);
}

TEST(writer_table_lists_the_three)
{
	static const char *const stacks[] = { "folded", "svg", "pprof" };

	/* one table: the stack formats render stacks only, text renders reports only */
	for (int i = 0; i < 3; i++) {
		const struct ks_writer *w = ks_writer_find(stacks[i]);

		EXPECT_TRUE(w && w->stacks && !w->report);
	}
	EXPECT_TRUE(ks_writer_find("text") && !ks_writer_find("text")->stacks);
}

/* The profile's copies of stacks: equal bytes are one blob whose values sum, across table growth. */
TEST(blobs_merge_by_content)
{
	struct ks_blobs b;
	uint64_t ips[3] = { 0x401000, 0x402000, 0x403000 };
	int64_t first, id;

	ks_blobs_init(&b);
	first = ks_blobs_add(&b, ips, sizeof(ips), 5);
	ASSERT_EQ_INT(first, 0);
	/* a prefix is another blob */
	EXPECT_EQ_INT(ks_blobs_add(&b, ips, 2 * sizeof(ips[0]), 1), 1);
	for (uint64_t i = 0; i < 5000; i++) {
		ips[2] = 0x500000 + i;
		id = ks_blobs_add(&b, ips, sizeof(ips), i);
		EXPECT_EQ_INT(id, (int64_t)i + 2);
	}
	ips[2] = 0x403000;
	EXPECT_EQ_INT(ks_blobs_add(&b, ips, sizeof(ips), 7), first);
	EXPECT_EQ_U64(b.value[first], 12);
	ips[2] = 0x500000 + 4321;
	EXPECT_EQ_INT(ks_blobs_add(&b, ips, sizeof(ips), 1), 4321 + 2);
	EXPECT_EQ_U64(b.value[4321 + 2], 4322);
	EXPECT_EQ_U64(b.n, 5002);
	EXPECT_EQ_U64(b.len[1], 2 * sizeof(ips[0]));
	EXPECT_EQ_U64(b.bytes, 5001 * sizeof(ips) + 2 * sizeof(ips[0]));
	ks_blobs_free(&b);
	EXPECT_EQ_U64(b.n, 0);
}

/*
 * The (inflated) pprof bytes of fixed profiles, pinned (length and FNV-1a),
 * taken from the encoder before it moved onto output/pb.c: a change of
 * encoding layer must leave them byte for byte; a change of what is
 * encoded updates them (the period_type of every profile, once).  The second has 300 frames (ids past one varint
 * byte), no period, and values up to 2^63.
 */
TEST(pprof_bytes_pinned)
{
	static uint8_t raw[1 << 17];
	static const uint64_t want[2][2] = { { 392, 6405956668496050073ull }, { 24101, 10566088865604516021ull } };

	for (int k = 0; k < 2; k++) {
		struct ks_stacks st;
		size_t len, n;
		char *out;

		if (!k) {
			sample_profile(&st);
		} else {
			ks_stacks_init(&st, "alloc", "bytes", 0);
			for (int i = 0; i < 300; i++) {
				char a[32], b[32];

				snprintf(a, sizeof(a), "fn_%d", i);
				snprintf(b, sizeof(b), "k:kf_%d", i * 7 % 300);
				add(&st, (uint64_t)i * 123456789ull + (i == 299 ? 1ull << 62 : 0),
				    (const char *const[]){ i % 2 ? "comm1" : "comm2", "main", a, "w\xff", b, NULL });
			}
			ks_stacks_sort(&st);
		}
		out = render(&st, ks_write_pprof, &len);
		ASSERT_TRUE(out);
		n = gunzip(out, len, raw, sizeof(raw));
		EXPECT_EQ_U64(n, want[k][0]);
		EXPECT_EQ_U64(ks_fnv1a(raw, n, KS_FNV1A_INIT), want[k][1]);
		free(out);
		ks_stacks_free(&st);
	}
}
