/* The collector registry: one line per collector. */
#include <string.h>
#include "core/collector.h"

extern const struct ks_collector ks_syscalls_collector;
extern const struct ks_collector ks_runqlat_collector;
extern const struct ks_collector ks_offcpu_collector;
extern const struct ks_collector ks_wall_collector;
extern const struct ks_collector ks_biolat_collector;
extern const struct ks_collector ks_mem_collector;
extern const struct ks_collector ks_tcp_collector;
extern const struct ks_collector ks_net_collector;
extern const struct ks_collector ks_funclat_collector;
extern const struct ks_collector ks_netflow_collector;

const struct ks_collector *const ks_collectors[] = {
	&ks_syscalls_collector,
	&ks_runqlat_collector,
	&ks_offcpu_collector,
	&ks_wall_collector,
	&ks_biolat_collector,
	&ks_mem_collector,
	&ks_tcp_collector,
	&ks_net_collector,
	&ks_funclat_collector,
	&ks_netflow_collector,
	NULL,
};

const struct ks_collector *ks_collector_find(const char *name)
{
	for (int i = 0; ks_collectors[i]; i++)
		if (!strcmp(ks_collectors[i]->spec.name, name))
			return ks_collectors[i];
	return NULL;
}
