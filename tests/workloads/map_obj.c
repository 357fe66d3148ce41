/* Test workload for `profile --call-graph dwarf`: maps a relocatable object file (as a linker maps its inputs) and spins; prints "ready PID". */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

int main(int argc, char **argv)
{
	struct timespec t0, t;
	struct stat st;
	void *m;
	int fd;

	if (argc < 3) {
		fprintf(stderr, "usage: map_obj SECONDS OBJECT\n");
		return 2;
	}
	fd = open(argv[2], O_RDONLY);
	if (fd < 0 || fstat(fd, &st) || (m = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)) == MAP_FAILED) {
		perror(argv[2]);
		return 1;
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 100000; i++)
			sink = sink * 3 + (unsigned long)i;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < atof(argv[1]));
	munmap(m, st.st_size);
	return 0;
}
