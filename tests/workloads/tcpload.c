/* Test and bench workload: a TCP server that reads (or echoes) one connection, and a client that sends N bytes or does request/response rounds (itself, or after exec'ing another program on its socket). */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "gate.h"

static void usage(void)
{
	fprintf(stderr, "usage: tcpload -s ADDR PORT [-e] [-g]     serve one connection: greet with one byte,\n"
			"                                          read to EOF (-e: echo, then print the CPU ns\n"
			"                                          the process spent from accept to EOF), close\n"
			"       tcpload -c ADDR PORT [-n bytes] [-r rounds] [-g]\n"
			"               connect, send N bytes (or do R one-byte request/response rounds, each timed,\n"
			"               and print the median ns and the CPU ns the process spent in all rounds),\n"
			"               shut down, wait for the server to close\n"
			"       tcpload -F FD [-n bytes]   the same client on connected socket FD (after -x)\n"
			"  -g  print the pid and wait for SIGUSR1 before listening or connecting\n"
			"  -x PATH  (client) once connected and greeted, exec PATH -F FD -n bytes: the sender is\n"
			"           then another program, named after PATH, on the socket its predecessor opened\n");
	exit(2);
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* CPU time of the whole process: with loopback, receive processing runs in the sender's softirq and is charged here */
static double cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int resolve(const char *addr, const char *port, struct addrinfo **ai)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV };
	int err = getaddrinfo(addr, port, &hints, ai);

	if (err) {
		fprintf(stderr, "tcpload: bad address %s %s: %s\n", addr, port, gai_strerror(err));
		return 1;
	}
	return 0;
}

static int full_write(int fd, const char *buf, size_t n)
{
	while (n) {
		ssize_t w = write(fd, buf, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		buf += w;
		n -= (size_t)w;
	}
	return 0;
}

static int serve(struct addrinfo *ai, int echo)
{
	static char buf[1 << 16];
	int one = 1, ls, fd;
	long long total = 0;
	double cpu0;
	ssize_t n;

	ls = socket(ai->ai_family, SOCK_STREAM, 0);
	if (ls < 0 || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(ls, ai->ai_addr, ai->ai_addrlen) || listen(ls, 4)) {
		fprintf(stderr, "tcpload: cannot listen: %s\n", strerror(errno));
		return 1;
	}
	printf("listening\n");
	fflush(stdout);
	fd = accept(ls, NULL, NULL);
	if (fd < 0) {
		fprintf(stderr, "tcpload: accept: %s\n", strerror(errno));
		return 1;
	}
	cpu0 = cpu_ns();
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* a greeting: the client sends nothing before the connection is accepted */
	if (full_write(fd, "h", 1)) {
		fprintf(stderr, "tcpload: write: %s\n", strerror(errno));
		return 1;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		total += n;
		if (echo && full_write(fd, buf, (size_t)n))
			break;
	}
	printf("received %lld\n", total);
	if (echo)
		printf("cpu_ns %.0f\n", cpu_ns() - cpu0);
	close(fd);
	close(ls);
	return n < 0;
}

/* Connects to @ai and reads the greeting; the socket, or -1. */
static int connect_greeted(struct addrinfo *ai)
{
	int one = 1, fd = socket(ai->ai_family, SOCK_STREAM, 0);
	char c;

	if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen)) {
		fprintf(stderr, "tcpload: cannot connect: %s\n", strerror(errno));
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (read(fd, &c, 1) != 1) {
		fprintf(stderr, "tcpload: no greeting from the server: %s\n", strerror(errno));
		return -1;
	}
	return fd;
}

/* The client's work on connected socket @fd. */
static int client(int fd, long long bytes, long rounds)
{
	static char buf[1 << 16];
	double *each = rounds ? malloc((size_t)rounds * sizeof(*each)) : NULL;
	double cpu0;

	if (rounds && !each) {
		fprintf(stderr, "tcpload: out of memory\n");
		return 1;
	}
	memset(buf, 'k', sizeof(buf));
	while (bytes > 0) {
		size_t n = bytes < (long long)sizeof(buf) ? (size_t)bytes : sizeof(buf);

		if (full_write(fd, buf, n)) {
			fprintf(stderr, "tcpload: write: %s\n", strerror(errno));
			return 1;
		}
		bytes -= (long long)n;
	}
	cpu0 = cpu_ns();
	for (long i = 0; i < rounds; i++) {
		double t0 = now_ns();

		if (write(fd, buf, 1) != 1 || read(fd, buf, 1) != 1) {
			fprintf(stderr, "tcpload: round %ld: %s\n", i, strerror(errno));
			return 1;
		}
		each[i] = now_ns() - t0;
	}
	if (rounds) {
		/* the median: a busy machine delays some rounds, not the tracing cost */
		qsort(each, (size_t)rounds, sizeof(*each), cmp_double);
		printf("%.1f %.0f\n", each[rounds / 2], cpu_ns() - cpu0);
		free(each);
	}
	/* everything sent is acknowledged once the server has read it all and closed */
	shutdown(fd, SHUT_WR);
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	int opt, server = -1, echo = 0, gate = 0, err, fd = -1;
	const char *exec_path = NULL;
	long long bytes = 0;
	long rounds = 0;
	struct addrinfo *ai;

	while ((opt = getopt(argc, argv, "scen:r:gF:x:")) != -1) {
		switch (opt) {
		case 's': server = 1; break;
		case 'c': server = 0; break;
		case 'e': echo = 1; break;
		case 'n': bytes = atoll(optarg); break;
		case 'r': rounds = atol(optarg); break;
		case 'g': gate = 1; break;
		case 'F': fd = atoi(optarg); break;
		case 'x': exec_path = optarg; break;
		default: usage();
		}
	}
	if (fd >= 0)
		return optind != argc || bytes < 0 ? (usage(), 2) : client(fd, bytes, 0);
	if (server < 0 || optind != argc - 2 || bytes < 0 || rounds < 0 || (exec_path && (server || rounds)))
		usage();
	if (resolve(argv[optind], argv[optind + 1], &ai))
		return 1;
	if (gate)
		gate_open();
	if (server) {
		err = serve(ai, echo);
	} else {
		fd = connect_greeted(ai);
		if (fd >= 0 && exec_path) {
			char fds[16], n[32];

			snprintf(fds, sizeof(fds), "%d", fd);
			snprintf(n, sizeof(n), "%lld", bytes);
			execl(exec_path, exec_path, "-F", fds, "-n", n, (char *)NULL);
			fprintf(stderr, "tcpload: cannot exec %s: %s\n", exec_path, strerror(errno));
			return 1;
		}
		err = fd < 0 ? 1 : client(fd, bytes, rounds);
	}
	freeaddrinfo(ai);
	return err;
}
