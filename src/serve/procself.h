/* The exporter's own families: ksight_build_info and the process_* ones Prometheus client libraries export. */
#ifndef KS_SERVE_PROCSELF_H
#define KS_SERVE_PROCSELF_H

#include "output/prom.h"

/*
 * ksight_build_info 1 with labels version, revision (the git commit the
 * build saw, "unknown" outside a checkout), kernel (uname -r) and libbpf
 * (the library's version at run time).  0 or -ENOMEM.
 */
int prom_add_build_info(struct prom_set *set);

/*
 * client_golang's process collector, same names, types and units, read
 * from /proc/self: process_cpu_seconds_total, process_open_fds,
 * process_max_fds, process_virtual_memory_bytes,
 * process_resident_memory_bytes, process_start_time_seconds (Unix time).
 * A file that cannot be read leaves its families out.  0 or -ENOMEM.
 */
int prom_add_process(struct prom_set *set);

#endif
