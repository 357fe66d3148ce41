/* Test workload for `ksight profile`: a known hot function (hot_spin) reached only through libc's qsort comparison callback. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define N 64

static volatile sig_atomic_t stop;
static volatile unsigned long sink;

static void on_alarm(int sig)
{
	(void)sig;
	stop = 1;
}

/* The busy function every comparison calls: most samples should land here. */
__attribute__((noinline)) unsigned long hot_spin(int a, int b)
{
	unsigned long x = (unsigned long)(a ^ b);

	for (int i = 0; i < 4000; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

/* A little work outside the comparisons, so the profile has a second, smaller peak. */
__attribute__((noinline)) unsigned long cold_spin(void)
{
	unsigned long x = 1;

	for (int i = 0; i < 20000; i++)
		x = x * 2862933555777941757ull + 3037000493ull;
	return x;
}

/* qsort's callback: the result of hot_spin is used after it returns, so the call is never a tail call. */
static int cmp(const void *pa, const void *pb)
{
	int a = *(const int *)pa, b = *(const int *)pb;

	sink += hot_spin(a, b);
	return (a > b) - (a < b);
}

/* "-i": the comparison goes through weigh, which the compiler inlines: a frame only DWARF tells of. */
static inline __attribute__((always_inline)) int weigh(int a, int b)
{
	sink += hot_spin(a, b);
	return (a > b) - (a < b);
}

__attribute__((noinline)) static int cmp_inl(const void *pa, const void *pb)
{
	int r = weigh(*(const int *)pa, *(const int *)pb);

	/* work after the inlined call: it is no tail call, and the return address stays inside weigh */
	sink ^= (unsigned long)r;
	return r;
}

static int (*cmp_fn)(const void *, const void *) = cmp;

/* The sorting loop; v is its own, so its frame is part of every sample's stack. */
__attribute__((noinline)) static void sort_loop(void)
{
	int v[N];

	srand(1);
	while (!stop) {
		for (int i = 0; i < N; i++)
			v[i] = rand();
		qsort(v, N, sizeof(v[0]), cmp_fn);
		sink += cold_spin();
	}
}

/*
 * "-e": the loop runs on a stack whose end (an unmapped page above it) is a
 * few hundred bytes past its outermost frame, as a thread's or a small
 * process's stack can be: a copy of the stack that stops short of the end
 * loses the outer frames.
 */
static int run_at_stack_edge(void)
{
	static ucontext_t back, ctx;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), size = 16 * pg;
	char *m = mmap(NULL, size + pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED || mprotect(m + size, pg, PROT_NONE))
		return -1;
	getcontext(&ctx);
	ctx.uc_stack.ss_sp = m;
	/* the first frame starts at the top: the end is the width of a few frames above hot_spin's */
	ctx.uc_stack.ss_size = size;
	ctx.uc_link = &back;
	makecontext(&ctx, sort_loop, 0);
	return swapcontext(&back, &ctx);
}

/*
 * argv[1]: seconds of CPU time to run (default 10), counted by ITIMER_PROF: on a
 * loaded machine a budget of wall time gave the profiler too few samples to judge
 * (16 in 2 s at 99 Hz, beside six busy loops); the flags that follow, in any
 * order: "-g": print "ready PID" and wait for SIGUSR1 before starting (without:
 * print it and start); "-e": run at a stack's edge (run_at_stack_edge); "-i":
 * compare through cmp_inl.  At the end prints "cpu NS", the CPU time the process used.
 */
int main(int argc, char **argv)
{
	int secs = argc > 1 ? atoi(argv[1]) : 10, sig, gate = 0, edge = 0;
	struct itimerval budget = { .it_value.tv_sec = secs > 0 ? secs : 10 };
	struct timespec cpu;
	sigset_t set;

	for (int i = 2; i < argc; i++) {
		gate |= !strcmp(argv[i], "-g");
		edge |= !strcmp(argv[i], "-e");
		if (!strcmp(argv[i], "-i"))
			cmp_fn = cmp_inl;
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	if (gate) {
		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		sigprocmask(SIG_BLOCK, &set, NULL);
		sigwait(&set, &sig);
	}
	signal(SIGPROF, on_alarm);
	setitimer(ITIMER_PROF, &budget, NULL);
	if (edge) {
		if (run_at_stack_edge())
			return perror("stack"), 1;
	} else {
		sort_loop();
	}
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
	printf("cpu %lld\n", cpu.tv_sec * 1000000000ll + cpu.tv_nsec);
	return 0;
}
