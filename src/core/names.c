/* Look-ups in the generated syscall and errno tables. */
#include <string.h>
#include <strings.h>
#include "core/names.h"

/*
 * Kernel-internal restart codes: never seen by user space, but sys_exit
 * observes them before signal handling rewrites them
 * (include/linux/errno.h, not exported to uapi headers).
 */
static const struct ks_name internal_errnos[] = {
	{ 512, "ERESTARTSYS" }, { 513, "ERESTARTNOINTR" }, { 514, "ERESTARTNOHAND" },
	{ 515, "ENOIOCTLCMD" }, { 516, "ERESTART_RESTARTBLOCK" }, { 517, "EPROBE_DEFER" },
	{ -1, 0 },
};

static const char *find_num(const struct ks_name *t, int num)
{
	for (; t->name; t++)
		if (t->num == num)
			return t->name;
	return NULL;
}

const char *ks_syscall_name(int nr)
{
	return find_num(ks_syscall_names, nr);
}

const char *ks_errno_name(int err)
{
	const char *n = find_num(ks_errno_names, err);

	return n ? n : find_num(internal_errnos, err);
}

int ks_syscall_nr(const char *name)
{
	for (const struct ks_name *t = ks_syscall_names; t->name; t++)
		if (!strcmp(t->name, name))
			return t->num;
	return -1;
}

int ks_errno_nr(const char *name)
{
	const struct ks_name *tables[] = { ks_errno_names, internal_errnos };

	for (int i = 0; i < 2; i++)
		for (const struct ks_name *t = tables[i]; t->name; t++)
			if (!strcasecmp(t->name, name) || !strcasecmp(t->name + 1, name))
				return t->num;
	return -1;
}
