/* Readers of /proc and /sys files relative to a root directory, so fixture trees can stand in for the machine. */
#ifndef KS_CORE_PROCFS_H
#define KS_CORE_PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * @root is prepended to every absolute @path: NULL or "" for the machine,
 * a fixture directory in tests.  Every reader returns 0 or a negative
 * errno and never logs: the caller knows whether a missing file matters.
 */

/* The whole of ROOT@path (at most @len - 1 bytes), NUL-terminated: bytes read or -errno. */
int ks_procfs_read(const char *root, const char *path, char *buf, size_t len);
/* The first line of ROOT@path without its trailing white space; "" in @buf on failure. */
int ks_procfs_line(const char *root, const char *path, char *buf, size_t len);
/* A file holding one decimal integer: -EINVAL when it holds anything else or does not fit. */
int ks_procfs_u64(const char *root, const char *path, uint64_t *out);
int ks_procfs_int(const char *root, const char *path, int *out);

/* ROOT/proc/sys/kernel/pid_max, or 4194304 (the kernel's PID_MAX_LIMIT) when unreadable. */
uint64_t ks_procfs_pid_max(const char *root);
/* Command name of process @pid (ROOT/proc/PID/comm) into @comm (16 bytes); -ENODATA when empty. */
int ks_procfs_comm(const char *root, uint32_t pid, char *comm);
/* State letter and thread count of process @pid from ROOT/proc/PID/stat (fields 3 and 20). */
int ks_procfs_stat(const char *root, uint32_t pid, char *state, int *nthreads);
/* Whether ROOT/proc/@pid exists, or with @tid != 0 ROOT/proc/@pid/task/@tid. */
bool ks_procfs_pid_exists(const char *root, uint32_t pid, uint32_t tid);
/* Mount point of the first mount of type @fstype in ROOT/proc/self/mounts: -ENOENT when none. */
int ks_procfs_mount_of(const char *root, const char *fstype, char *dir, size_t len);

#endif
