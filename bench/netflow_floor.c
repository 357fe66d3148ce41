/* Attaches bench/netflow_floor.bpf.c's empty program at XDP or tcx ingress of a device as netflow does (a link), says "attached", holds it until SIGINT or SIGTERM. */
#include <errno.h>
#include <net/if.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "netflow_floor.skel.h"

/* tcx ingress and "first in the chain" by their uapi values: libbpf 1.1's headers predate them */
#define TCX_INGRESS ((enum bpf_attach_type)46)
#define F_BEFORE (1u << 3)

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	struct ks_netflow_floor *s = NULL;
	struct bpf_link *link = NULL;
	unsigned int ifindex;
	int fd = -1, err = 1;

	if (argc != 3 || (strcmp(argv[1], "xdp") && strcmp(argv[1], "tc"))) {
		fprintf(stderr, "usage: netflow_floor xdp|tc DEV\n");
		return 2;
	}
	ifindex = if_nametoindex(argv[2]);
	if (!ifindex) {
		fprintf(stderr, "netflow_floor: no device '%s'\n", argv[2]);
		return 2;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	s = ks_netflow_floor__open_and_load();
	if (!s)
		goto cleanup;
	if (!strcmp(argv[1], "xdp")) {
		link = bpf_program__attach_xdp(s->progs.floor_xdp, (int)ifindex);
		if (!link)
			goto cleanup;
	} else {
		LIBBPF_OPTS(bpf_link_create_opts, o, .flags = F_BEFORE);

		fd = bpf_link_create(bpf_program__fd(s->progs.floor_tc), (int)ifindex, TCX_INGRESS, &o);
		if (fd < 0)
			goto cleanup;
	}
	fprintf(stderr, "attached\n");
	while (!stop)
		pause();
	err = 0;
cleanup:
	if (err)
		fprintf(stderr, "netflow_floor: cannot load or attach: %s\n", strerror(errno));
	bpf_link__destroy(link);
	if (fd >= 0)
		close(fd);
	ks_netflow_floor__destroy(s);
	return err;
}
