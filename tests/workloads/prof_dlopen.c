/* Workload for profile --call-graph cfi after its tables were read: it dlopens a library (no frame pointers) and spins in it, and in the vDSO's clock_gettime. */
/*
 * Usage: prof_dlopen LIB SECONDS
 * Prints "ready PID", waits for SIGUSR1 (profile it with -p meanwhile:
 * its tables are read then, before LIB is loaded), spins 300 ms in its own
 * self_spin (sampled: announced, its tables read again), dlopens LIB, then
 * alternates for SECONDS: 50 ms in main -> run_lib -> dl_outer -> dl_hot
 * (LIB), 50 ms in main -> vdso_spin -> clock_gettime (libc) -> the vDSO.
 * Prints "lib_ns N" and "vdso_ns N", the time each phase took, at the end.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "gate.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static volatile uint64_t sink;

__attribute__((noinline)) static void run_lib(uint64_t (*outer)(uint64_t), uint64_t until)
{
	while (now_ns() < until)
		sink += outer(sink);
	__asm__ volatile("" ::: "memory");
}

/* nearly all of its time in the vDSO: clock_gettime back to back */
__attribute__((noinline)) static void vdso_spin(uint64_t until)
{
	struct timespec ts;

	do {
		for (int i = 0; i < 64; i++)
			clock_gettime(CLOCK_MONOTONIC, &ts);
	} while ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec < until);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void self_spin(uint64_t until)
{
	while (now_ns() < until)
		sink = sink * 3 + 1;
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	uint64_t (*outer)(uint64_t);
	uint64_t end, t, lib_ns = 0, vdso_ns = 0;
	void *h;

	if (argc != 3) {
		fprintf(stderr, "usage: prof_dlopen LIB SECONDS\n");
		return 2;
	}
	gate_open_as("ready %d\n");
	self_spin(now_ns() + 300000000);
	h = dlopen(argv[1], RTLD_NOW);
	if (!h || !(outer = (uint64_t(*)(uint64_t))dlsym(h, "dl_outer"))) {
		fprintf(stderr, "prof_dlopen: %s\n", dlerror());
		return 1;
	}
	end = now_ns() + (uint64_t)(atof(argv[2]) * 1e9);
	while ((t = now_ns()) < end) {
		run_lib(outer, t + 50000000);
		lib_ns += now_ns() - t;
		t = now_ns();
		vdso_spin(t + 50000000);
		vdso_ns += now_ns() - t;
	}
	printf("lib_ns %llu\nvdso_ns %llu\n", (unsigned long long)lib_ns, (unsigned long long)vdso_ns);
	return 0;
}
