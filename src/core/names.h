/* Syscall and errno name tables (generated at build time) and look-ups in both directions. */
#ifndef KS_CORE_NAMES_H
#define KS_CORE_NAMES_H

struct ks_name {
	int num;
	const char *name;
};

/* Terminated by { -1, 0 }; sorted by number. */
extern const struct ks_name ks_syscall_names[];
extern const struct ks_name ks_errno_names[];

/* NULL when the number has no name. */
const char *ks_syscall_name(int nr);
const char *ks_errno_name(int err);
/* -1 when the name is unknown; errno names are matched with or without a leading 'E'. */
int ks_syscall_nr(const char *name);
int ks_errno_nr(const char *name);

#endif
