/* Unit tests of the scheduler collectors' map sizes (src/collectors/sched.c) against the memory budget at 128 CPUs. */
#include <linux/bpf.h>
#include "test.h"
#include "collectors/sched.h"
#include "ksight/offcpu.h"
#include "ksight/runqlat.h"

/* What the maps of KS_SCHED_ROW_MAPS and the slots take, as ks_budget_check counts them. */
static uint64_t maps_bytes(const struct ks_budget *b, const struct ks_sched_sizes *sz, uint32_t vsz)
{
	uint32_t ksz = sizeof(struct ks_sched_key);

	return ks_map_bytes(BPF_MAP_TYPE_ARRAY, 4, sizeof(struct ks_sched_slot), sz->slots, 0, b->ncpus) +
	       ks_map_bytes(BPF_MAP_TYPE_PERCPU_ARRAY, 4, vsz, sz->rows, 0, b->ncpus) +
	       ks_map_bytes(BPF_MAP_TYPE_PERCPU_HASH, ksz, vsz, sz->hrows, 0, b->ncpus) +
	       ks_map_bytes(BPF_MAP_TYPE_HASH, ksz, vsz, sz->srows, 0, b->ncpus) +
	       ks_map_bytes(BPF_MAP_TYPE_ARRAY, 4, vsz, sz->sother, 0, b->ncpus);
}

static void check_all_modes(uint32_t nsub, uint32_t vsz, uint64_t pid_max)
{
	struct ks_budget b;
	struct ks_sched_sizes sz;

	ks_budget_init(&b, 0);
	b.ncpus = 128;
	for (int by = KS_SCHED_BY_NONE; by <= KS_SCHED_BY_CGROUP; by++) {
		ks_sched_sizes(&b, (enum ks_sched_by)by, nsub, vsz, pid_max, &sz);
		/* room left for .bss and .rodata */
		EXPECT_TRUE(maps_bytes(&b, &sz, vsz) + (64u << 10) <= b.limit);
		if (by == KS_SCHED_BY_NONE)
			EXPECT_TRUE(maps_bytes(&b, &sz, vsz) <= (16ull << 20));
		if (by >= KS_SCHED_BY_PID) {
			/* thousands of keys a half, and their "other" rows */
			EXPECT_TRUE(sz.srows >= 2 * 2048 * nsub || sz.srows >= 8192);
			EXPECT_EQ_U64(sz.sother, 2 * nsub);
		}
		if (by == KS_SCHED_BY_PRIO)
			EXPECT_TRUE(sz.hrows >= 2 * 10 * nsub); /* ten priorities in use a half, states apart */
	}
}

TEST(runqlat_every_mode_fits_at_128_cpus)
{
	check_all_modes(1, sizeof(struct ks_rq_stat), 32768);
	check_all_modes(1, sizeof(struct ks_rq_stat), 4194304);
}

TEST(offcpu_every_mode_fits_at_128_cpus)
{
	check_all_modes(KS_OFF_STATES, sizeof(struct ks_off_stat), 32768);
	check_all_modes(KS_OFF_STATES, sizeof(struct ks_off_stat), 4194304);
}

TEST(slots_cover_pid_max_within_an_eighth)
{
	struct ks_budget b;
	struct ks_sched_sizes sz;

	ks_budget_init(&b, 0);
	b.ncpus = 128;
	/* a 128-CPU node's default pid_max is 128 * 1024: every tid has its own slot */
	ks_sched_sizes(&b, KS_SCHED_BY_NONE, 1, sizeof(struct ks_rq_stat), 32768, &sz);
	EXPECT_EQ_U64(sz.slots, 131072);
	/* systemd's 4194304: 8 MiB of slots at most, tids alias */
	ks_sched_sizes(&b, KS_SCHED_BY_NONE, 1, sizeof(struct ks_rq_stat), 4194304, &sz);
	EXPECT_EQ_U64(sz.slots, 1u << 19);
}

TEST(rows_hold_short_histograms)
{
	/* values below 2^40 ns: 592 slots, 4.7 KiB a row a CPU */
	EXPECT_EQ_U64(KS_SCHED_HIST_SLOTS, 592);
	EXPECT_TRUE(sizeof(struct ks_rq_stat) <= 4864);
	EXPECT_TRUE(sizeof(struct ks_off_stat) <= 4864);
}
