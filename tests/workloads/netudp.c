/* Test workload of `ksight net`: sends N UDP datagrams of known sizes, or receives them, optionally sleeping before each read. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/*
 * netudp send ADDR PORT N SIZE [STEP] [-w]: N datagrams, the i-th of
 *   SIZE + (i % 4) * STEP bytes, sent from port PORT + 1; with -w each
 *   waits for the receiver's one-byte reply before the next is sent.
 *   Prints "sent N BYTES" (payload bytes).
 * netudp recv ADDR PORT N [-s US] [-r]: reads N datagrams on ADDR:PORT;
 *   with -s it waits until one is queued, then sleeps US microseconds
 *   before reading it; with -r it replies one byte to each.  Prints
 *   "ready" once bound, "received N BYTES" at the end; with -s, before it,
 *   "waits LO HI": bounds in ns, summed over the datagrams, of the time
 *   each spent queued to the socket (see do_recv).
 */
static void usage(void)
{
	fprintf(stderr, "usage: netudp send ADDR PORT N SIZE [STEP] [-w] | recv ADDR PORT N [-s US] [-r]\n");
	exit(2);
}

static int sock_at(const char *addr, int port, struct sockaddr_in *sa)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	struct timeval tv = { .tv_sec = 10 };

	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((unsigned short)port);
	if (fd < 0 || inet_pton(AF_INET, addr, &sa->sin_addr) != 1) {
		perror("netudp: socket");
		exit(1);
	}
	/* a lost datagram ends the run with an error instead of hanging the test */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

static int do_send(int argc, char **argv)
{
	static char buf[65536];
	struct sockaddr_in to, from;
	long n, size, step = 0, total = 0;
	int fd, port, wait_reply = 0;

	if (argc < 6)
		usage();
	port = atoi(argv[3]);
	n = atol(argv[4]);
	size = atol(argv[5]);
	for (int i = 6; i < argc; i++) {
		if (!strcmp(argv[i], "-w"))
			wait_reply = 1;
		else
			step = atol(argv[i]);
	}
	if (size < 1 || size + 3 * step > 60000 || n < 1)
		usage();
	fd = sock_at(argv[2], port, &to);
	memset(&from, 0, sizeof(from));
	from.sin_family = AF_INET;
	from.sin_port = htons((unsigned short)(port + 1));
	if (bind(fd, (struct sockaddr *)&from, sizeof(from))) {
		perror("netudp: bind");
		return 1;
	}
	for (long i = 0; i < n; i++) {
		long len = size + (i % 4) * step;

		if (sendto(fd, buf, (size_t)len, 0, (struct sockaddr *)&to, sizeof(to)) != len) {
			perror("netudp: sendto");
			return 1;
		}
		total += len;
		if (wait_reply && recv(fd, buf, 1, 0) != 1) {
			perror("netudp: no reply");
			return 1;
		}
	}
	printf("sent %ld %ld\n", n, total);
	return 0;
}

static long long now_ns(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* The kernel's receive stamp (SO_TIMESTAMPNS, CLOCK_REALTIME) of the datagram @m holds; 0 when missing. */
static long long rx_stamp(struct msghdr *m)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
			struct timespec t;

			memcpy(&t, CMSG_DATA(c), sizeof(t));
			return t.tv_sec * 1000000000LL + t.tv_nsec;
		}
	}
	return 0;
}

/*
 * The time a datagram waits in the socket's queue (from its queueing,
 * sk_data_ready, to the return of its read) lies between two bounds the
 * receiver measures itself, exact however late the scheduler runs it:
 * at least from the return of the poll that found it queued to the start
 * of the read; at most from the kernel's receive stamp, taken before it is
 * queued, to the return of the read.
 */
static int do_recv(int argc, char **argv)
{
	static char buf[65536];
	union {
		char b[CMSG_SPACE(sizeof(struct timespec))];
		struct cmsghdr align;
	} ctl;
	struct sockaddr_in at, peer;
	long n, total = 0, sleep_us = 0;
	long long lo = 0, hi = 0;
	int fd, reply = 0, on = 1;

	if (argc < 5)
		usage();
	n = atol(argv[4]);
	for (int i = 5; i < argc; i++) {
		if (!strcmp(argv[i], "-r"))
			reply = 1;
		else if (!strcmp(argv[i], "-s") && i + 1 < argc)
			sleep_us = atol(argv[++i]);
		else
			usage();
	}
	fd = sock_at(argv[2], atoi(argv[3]), &at);
	if (bind(fd, (struct sockaddr *)&at, sizeof(at))) {
		perror("netudp: bind");
		return 1;
	}
	if (sleep_us && setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof(on))) {
		perror("netudp: SO_TIMESTAMPNS");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	for (long i = 0; i < n; i++) {
		struct iovec iov = { buf, sizeof(buf) };
		struct msghdr m = { .msg_name = &peer, .msg_namelen = sizeof(peer), .msg_iov = &iov, .msg_iovlen = 1 };
		long long t_poll = 0, t_read = 0, stamp;
		ssize_t got;

		if (sleep_us) {
			struct pollfd p = { .fd = fd, .events = POLLIN };
			struct timespec ts = { sleep_us / 1000000, (sleep_us % 1000000) * 1000 };

			if (poll(&p, 1, 10000) != 1) {
				fprintf(stderr, "netudp: nothing to read after %ld datagrams\n", i);
				return 1;
			}
			t_poll = now_ns(CLOCK_MONOTONIC);
			while (nanosleep(&ts, &ts) && errno == EINTR)
				;
			m.msg_control = ctl.b;
			m.msg_controllen = sizeof(ctl.b);
			t_read = now_ns(CLOCK_MONOTONIC);
		}
		got = recvmsg(fd, &m, 0);
		if (got < 0) {
			fprintf(stderr, "netudp: recv after %ld datagrams: %s\n", i, strerror(errno));
			return 1;
		}
		if (sleep_us) {
			/* the stamp is wall-clock time: its age is taken on the same clock */
			stamp = rx_stamp(&m);
			if (!stamp) {
				fprintf(stderr, "netudp: datagram %ld has no receive stamp\n", i);
				return 1;
			}
			hi += now_ns(CLOCK_REALTIME) - stamp;
			lo += t_read - t_poll;
		}
		total += got;
		if (reply && sendto(fd, buf, 1, 0, (struct sockaddr *)&peer, m.msg_namelen) != 1) {
			perror("netudp: reply");
			return 1;
		}
	}
	if (sleep_us)
		printf("waits %lld %lld\n", lo, hi);
	printf("received %ld %ld\n", n, total);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		usage();
	if (!strcmp(argv[1], "send"))
		return do_send(argc, argv);
	if (!strcmp(argv[1], "recv"))
		return do_recv(argc, argv);
	usage();
	return 2;
}
