/* Test workload for funclat on many functions: flm_000 .. flm_599, each called exactly R times after SIGUSR1; then waits for SIGUSR1 again before it exits. */
#include <stdio.h>
#include <stdlib.h>
#include "gate.h"

#define NFUNCS 600

/* noinline and used: each a real call with its own symbol */
#define F(n)                                                                                                           \
	__attribute__((noinline, used)) int flm_##n(int x)                                                             \
	{                                                                                                              \
		__asm__ volatile("" ::: "memory");                                                                     \
		return x + 1;                                                                                          \
	}
#define F10(p) F(p##0) F(p##1) F(p##2) F(p##3) F(p##4) F(p##5) F(p##6) F(p##7) F(p##8) F(p##9)
#define F100(p) F10(p##0) F10(p##1) F10(p##2) F10(p##3) F10(p##4) F10(p##5) F10(p##6) F10(p##7) F10(p##8) F10(p##9)
F100(0) F100(1) F100(2) F100(3) F100(4) F100(5)

#define P(n) flm_##n,
#define P10(p) P(p##0) P(p##1) P(p##2) P(p##3) P(p##4) P(p##5) P(p##6) P(p##7) P(p##8) P(p##9)
#define P100(p) P10(p##0) P10(p##1) P10(p##2) P10(p##3) P10(p##4) P10(p##5) P10(p##6) P10(p##7) P10(p##8) P10(p##9)
static int (*const funcs[NFUNCS])(int) = { P100(0) P100(1) P100(2) P100(3) P100(4) P100(5) };

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 3;
	int acc = 0;

	gate_open_as("ready %d\n");
	for (long r = 0; r < rounds; r++)
		for (int i = 0; i < NFUNCS; i++)
			acc = funcs[i](acc);
	printf("done %d\n", acc);
	fflush(stdout);
	gate_wait();
	return 0;
}
