/* The library prof_dlopen loads after profiling began: a hot function two calls deep, built without frame pointers. */
#include <stdint.h>

/* noinline: each is its own frame, to be found in the stack */
__attribute__((noinline)) uint64_t dl_hot(uint64_t n)
{
	volatile uint64_t x = n;

	for (int i = 0; i < 20000; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

__attribute__((noinline)) uint64_t dl_outer(uint64_t n)
{
	uint64_t s = 0;

	for (int i = 0; i < 16; i++)
		s += dl_hot(n + (uint64_t)i);
	__asm__ volatile("" ::: "memory"); /* no tail call: dl_outer stays on the stack */
	return s;
}
