/* Test workload of `ksight wall`'s user/system split: spins MS ms of wall time in user space ("user") or in getppid ("sys"), then prints "TID UTIME STIME" (ticks, /proc/self/stat) and exits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t); /* the vDSO's: no system call */
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* noinline: named frames for the stack tests */
__attribute__((noinline)) static unsigned long spin_user(long long end)
{
	volatile unsigned long x = 0;

	while (now_ns() < end)
		for (int i = 0; i < 10000; i++)
			x += i;
	return x;
}

__attribute__((noinline)) static void spin_sys(long long end)
{
	while (now_ns() < end)
		for (int i = 0; i < 100; i++)
			syscall(SYS_getppid);
}

int main(int argc, char **argv)
{
	char buf[1024], *p;
	unsigned long long ut = 0, st = 0;
	long long end;
	FILE *f;
	size_t n;

	if (argc != 3 || (strcmp(argv[1], "user") && strcmp(argv[1], "sys"))) {
		fprintf(stderr, "usage: wallsplit user|sys MS\n");
		return 2;
	}
	end = now_ns() + atoll(argv[2]) * 1000000LL;
	if (!strcmp(argv[1], "user"))
		spin_user(end);
	else
		spin_sys(end);
	f = fopen("/proc/self/stat", "r");
	if (!f)
		return 1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return 1;
	printf("%ld %llu %llu\n", (long)syscall(SYS_gettid), ut, st);
	return 0;
}
