/* Unit tests of the collectors' "map entry bytes -> report row" steps (syscalls, runqlat, offcpu) and the scheduler labels, without root or maps. */
#include "test.h"
#include "collectors/rows.h"
#include "core/report.h"

/* The key named @name of @row, or NULL. */
static const struct ks_key *key(const struct ks_row *row, const char *name)
{
	for (int i = 0; i < row->nkeys; i++)
		if (!strcmp(row->keys[i].name, name))
			return &row->keys[i];
	return NULL;
}

/* The value named @name of @row; UINT64_MAX when it has none. */
static uint64_t val(const struct ks_row *row, const char *name)
{
	for (int i = 0; i < row->nvals; i++)
		if (!strcmp(row->vals[i].name, name))
			return row->vals[i].v;
	return UINT64_MAX;
}

/* The text of key @name of @row, "(none)" without it; its number, INT64_MIN without it. */
static const char *kstr(const struct ks_row *row, const char *name)
{
	const struct ks_key *k = key(row, name);

	return k ? k->str : "(none)";
}

static int64_t knum(const struct ks_row *row, const char *name)
{
	const struct ks_key *k = key(row, name);

	return k ? k->num : INT64_MIN;
}

#define EXPECT_KEY_STR(row, name, s) EXPECT_EQ_STR(kstr(row, name), s)
#define EXPECT_KEY_NUM(row, name, n) EXPECT_EQ_INT(knum(row, name), n)

/* One shared syscalls row as the kernel leaves it: counters and slot counts (slot 3: 4, slot 9: 1). */
static void sc_bytes(struct ks_sc_srow *s)
{
	memset(s, 0, sizeof(*s));
	s->c.count = 5;
	s->c.errors = 2;
	s->c.sum_ns = 12345;
	s->c.max_ns = 9000;
	s->slot[3] = 4;
	s->slot[9] = 1;
}

/* A fresh report @r holding the one row ks_syscalls_row makes of sc_bytes() under key @k; NULL on failure. */
static const struct ks_row *sc_one_row(struct ks_report *r, enum ks_sc_by by, bool count_only, const struct ks_sc_key *k)
{
	struct ks_sc_srow s;

	ks_report_init(r, "syscalls", "test");
	sc_bytes(&s);
	if (ks_syscalls_row(r, by, count_only, k, &s, -1) || r->nrows != 1)
		return NULL;
	return &r->rows[0];
}

TEST(syscalls_comm_syscall_row)
{
	struct ks_report r;
	struct ks_sc_key k = { .nr = 0 };
	const struct ks_row *row;

	memcpy(k.t.comm, "worker", 7);
	row = sc_one_row(&r, KS_SC_BY_COMM_SYSCALL, false, &k);
	ASSERT_TRUE(row != NULL);
	EXPECT_KEY_STR(row, "comm", "worker");
	EXPECT_KEY_STR(row, "syscall", "read");
	EXPECT_KEY_NUM(row, "nr", 0);
	EXPECT_EQ_U64(val(row, "count"), 5);
	EXPECT_EQ_U64(val(row, "errors"), 2);
	EXPECT_EQ_U64(val(row, "total_ns"), 12345);
	/* the histogram: the slot counts, with the counters' sum and max */
	ASSERT_TRUE(row->hist != NULL);
	EXPECT_EQ_U64(row->hist->count, 5);
	EXPECT_EQ_U64(row->hist->slots[3], 4);
	EXPECT_EQ_U64(row->hist->slots[9], 1);
	EXPECT_EQ_U64(row->hist->sum, 12345);
	EXPECT_EQ_U64(row->hist->max, 9000);
	EXPECT_EQ_U64(row->sort, 12345);
	EXPECT_EQ_INT(row->overflow, 0);
	ks_report_free(&r);
}

TEST(syscalls_pid_row_named_from_proc)
{
	struct ks_report r;
	struct ks_sc_key k = { .t.id = (uint32_t)getpid() };
	const struct ks_row *row;
	char comm[32] = "";
	FILE *f = fopen("/proc/self/comm", "r");

	ASSERT_TRUE(f && fgets(comm, sizeof(comm), f));
	fclose(f);
	comm[strcspn(comm, "\n")] = 0;
	/* no pid -> comm map (fd -1): a live process is named by /proc */
	row = sc_one_row(&r, KS_SC_BY_PID, false, &k);
	ASSERT_TRUE(row != NULL);
	EXPECT_KEY_NUM(row, "pid", getpid());
	EXPECT_KEY_STR(row, "comm", comm);
	/* pid mode has no syscall column */
	EXPECT_TRUE(!key(row, "syscall"));
	ks_report_free(&r);
}

TEST(syscalls_other_and_count_only)
{
	struct ks_report r;
	struct ks_sc_key k = { .other = 1 };
	const struct ks_row *row = sc_one_row(&r, KS_SC_BY_CGROUP_SYSCALL, true, &k);

	ASSERT_TRUE(row != NULL);
	/* the same columns as every row, named "other" */
	EXPECT_KEY_STR(row, "cgroup", "other");
	EXPECT_KEY_NUM(row, "cgroup_id", 0);
	EXPECT_KEY_STR(row, "syscall", "other");
	EXPECT_KEY_NUM(row, "nr", KS_SC_ROWS - 1);
	/* -c: counts only, no time, no histogram, sorted by count */
	EXPECT_EQ_U64(val(row, "count"), 5);
	EXPECT_EQ_U64(val(row, "total_ns"), UINT64_MAX);
	EXPECT_TRUE(row->hist == NULL);
	EXPECT_EQ_U64(row->sort, 5);
	ks_report_free(&r);
}

TEST(runqlat_sums_cpu_copies)
{
	struct ks_report r;
	struct ks_rq_stat v[3];
	struct ks_sched_rowid id = { .num = 7 };
	struct ks_row *row = NULL;

	memset(v, 0, sizeof(v));
	/* CPU 0 and CPU 2 saw waits; CPU 1 nothing */
	v[0].wakeups = 3, v[0].cross_cpu = 1, v[0].voluntary = 2, v[0].involuntary = 1, v[0].migrations = 1;
	v[0].lat.sum = 3000, v[0].lat.max = 1500, v[0].lat.slots[10] = 3;
	v[2].wakeups = 1, v[2].voluntary = 1;
	v[2].lat.sum = 70000, v[2].lat.max = 70000, v[2].lat.slots[20] = 1;
	ks_report_init(&r, "runqlat", "test");
	ASSERT_EQ_INT(ks_runqlat_row(&r, KS_SCHED_BY_CPU, &id, v, 3, &row), 1);
	ASSERT_TRUE(row == &r.rows[0]);
	EXPECT_KEY_NUM(row, "cpu", 7);
	EXPECT_EQ_U64(val(row, "count"), 4);
	EXPECT_EQ_U64(val(row, "total_wait_ns"), 73000);
	EXPECT_EQ_U64(val(row, "wakeups"), 4);
	EXPECT_EQ_U64(val(row, "cross_cpu"), 1);
	EXPECT_EQ_U64(val(row, "migrations"), 1);
	EXPECT_EQ_U64(val(row, "voluntary"), 3);
	EXPECT_EQ_U64(val(row, "involuntary"), 1);
	EXPECT_EQ_U64(row->hist->max, 70000);
	EXPECT_EQ_U64(row->hist->slots[10], 3);
	EXPECT_EQ_U64(row->sort, 73000);
	/* copies that hold nothing make no row */
	memset(v, 0, sizeof(v));
	EXPECT_EQ_INT(ks_runqlat_row(&r, KS_SCHED_BY_CPU, &id, v, 3, &row), 0);
	EXPECT_EQ_INT(r.nrows, 1);
	ks_report_free(&r);
}

TEST(offcpu_state_and_labels)
{
	struct ks_report r;
	struct ks_off_stat v;
	struct ks_sched_rowid id = { .sub = KS_OFF_D, .num = 4242 };

	memset(&v, 0, sizeof(v));
	v.off.sum = 5000000, v.off.max = 4000000, v.off.slots[30] = 2;
	memcpy(id.comm, "dd", 3);
	ks_report_init(&r, "offcpu", "test");
	ASSERT_EQ_INT(ks_offcpu_row(&r, KS_SCHED_BY_TID, &id, &v, 1), 1);
	EXPECT_KEY_NUM(&r.rows[0], "tid", 4242);
	EXPECT_KEY_STR(&r.rows[0], "comm", "dd");
	EXPECT_KEY_STR(&r.rows[0], "state", "D");
	EXPECT_EQ_U64(val(&r.rows[0], "count"), 2);
	EXPECT_EQ_U64(val(&r.rows[0], "total_ns"), 5000000);
	/* the "other" row of the pid hash: no number, named other */
	id.other = true;
	id.sub = KS_OFF_S;
	ASSERT_EQ_INT(ks_offcpu_row(&r, KS_SCHED_BY_PID, &id, &v, 1), 1);
	EXPECT_KEY_NUM(&r.rows[1], "pid", -1);
	EXPECT_KEY_STR(&r.rows[1], "comm", "other");
	EXPECT_KEY_STR(&r.rows[1], "state", "S");
	ks_report_free(&r);
}

TEST(sched_labels_prio_policy)
{
	struct ks_report r;
	struct ks_row *row;
	struct ks_sched_rowid id = { .num = 120 };

	ks_report_init(&r, "runqlat", "test");
	row = ks_report_add_row(&r);
	ASSERT_TRUE(row != NULL);
	ks_sched_label(row, KS_SCHED_BY_PRIO, &id);
	EXPECT_KEY_NUM(row, "prio", 120);
	EXPECT_KEY_STR(row, "class", "cfs");
	row = ks_report_add_row(&r);
	id.num = 50;
	ks_sched_label(row, KS_SCHED_BY_PRIO, &id);
	EXPECT_KEY_STR(row, "class", "rt");
	row = ks_report_add_row(&r);
	id.num = 1; /* SCHED_FIFO */
	ks_sched_label(row, KS_SCHED_BY_POLICY, &id);
	EXPECT_KEY_STR(row, "policy", "fifo");
	EXPECT_KEY_STR(row, "class", "rt");
	ks_report_free(&r);
}
