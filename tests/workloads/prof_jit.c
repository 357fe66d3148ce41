/* Workload for profile stacks through JIT code: a function generated at run time (frame pointer, no CFI, named in /tmp/perf-PID.map) calls a hot C function. */
/*
 * Usage: prof_jit SECONDS
 * Prints "ready PID", writes /tmp/perf-PID.map naming its generated code
 * jit_entry (removed at exit), waits for SIGUSR1, then spins SECONDS in
 * main -> jit_entry (anonymous executable memory) -> jit_hot.  jit_entry
 * keeps a frame pointer, as JITs do; the binary is built without them.
 * Prints "cpu NS" (its CPU time) at the end.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "gate.h"

static char map_path[64];

static uint64_t now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static volatile uint64_t sink;

/* about 1 ms of work a call, no calls of its own */
__attribute__((noinline)) void jit_hot(uint64_t n)
{
	uint64_t x = n;

	for (int i = 0; i < 400000; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink = x;
}

/*
 * jit_entry(fn, arg): push rbp; mov rbp, rsp; mov rax, rdi; mov rdi, rsi;
 * call rax; pop rbp; ret.  The call is no tail call: jit_entry stays on the
 * stack, its return address in its frame at rbp + 8.
 */
static const unsigned char code[] = {
	0x55,		  /* push rbp */
	0x48, 0x89, 0xe5, /* mov rbp, rsp */
	0x48, 0x89, 0xf8, /* mov rax, rdi */
	0x48, 0x89, 0xf7, /* mov rdi, rsi */
	0xff, 0xd0,	  /* call rax */
	0x5d,		  /* pop rbp */
	0xc3,		  /* ret */
};

static void unlink_map(void)
{
	unlink(map_path);
}

int main(int argc, char **argv)
{
	void (*entry)(void (*)(uint64_t), uint64_t);
	uint64_t end, c0;
	unsigned char *p;
	FILE *f;

	if (argc != 2) {
		fprintf(stderr, "usage: prof_jit SECONDS\n");
		return 2;
	}
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 1;
	memcpy(p, code, sizeof(code));
	if (mprotect(p, 4096, PROT_READ | PROT_EXEC))
		return 1;
	entry = (void (*)(void (*)(uint64_t), uint64_t))(uintptr_t)p;
	snprintf(map_path, sizeof(map_path), "/tmp/perf-%d.map", (int)getpid());
	f = fopen(map_path, "w");
	if (!f)
		return 1;
	fprintf(f, "%llx %zx jit_entry\n", (unsigned long long)(uintptr_t)p, sizeof(code));
	fclose(f);
	atexit(unlink_map);
	gate_open_as("ready %d\n");
	c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	end = now_ns(CLOCK_MONOTONIC) + (uint64_t)(atof(argv[1]) * 1e9);
	while (now_ns(CLOCK_MONOTONIC) < end)
		entry(jit_hot, sink);
	printf("cpu %llu\n", (unsigned long long)(now_ns(CLOCK_PROCESS_CPUTIME_ID) - c0));
	return 0;
}
