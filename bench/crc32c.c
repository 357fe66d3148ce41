/* Benchmark: MB/s of the recording's CRC32C, the table and the crc32c instruction, over a 64 MiB buffer (median of 7). */
/* cc -O2 -D_GNU_SOURCE -Iinclude -Isrc -o build/bench/crc32c bench/crc32c.c build/libksight.a -lz -lpthread */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "format/recfile.h"

#define LEN (64u << 20)
#define ROUNDS 7

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double mbs(uint32_t (*f)(uint32_t, const void *, size_t), const unsigned char *buf, uint32_t *out)
{
	double r[ROUNDS];

	for (int i = 0; i < ROUNDS; i++) {
		double t = now_s();

		*out = f(0, buf, LEN);
		r[i] = LEN / 1e6 / (now_s() - t);
	}
	qsort(r, ROUNDS, sizeof(r[0]), cmp);
	return r[ROUNDS / 2];
}

int main(void)
{
	unsigned char *buf = malloc(LEN);
	uint32_t a, b;

	if (!buf)
		return 1;
	for (uint32_t i = 0; i < LEN; i++)
		buf[i] = (unsigned char)(i * 2654435761u >> 24);
	printf("table        %8.0f MB/s\n", mbs(ks_crc32c_sw, buf, &a));
	printf("instruction  %8.0f MB/s%s\n", mbs(ks_crc32c_hw, buf, &b),
	       ks_crc32c_has_hw() ? "" : " (no crc32c instruction here: the table)");
	printf("same value   %s (%08x)\n", a == b ? "yes" : "NO", a);
	free(buf);
	return a != b;
}
