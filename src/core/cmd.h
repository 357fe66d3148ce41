/* `-- CMD`: the command a tracing command starts once attached, followed with its children in a cgroup of its own. */
#ifndef KS_CORE_CMD_H
#define KS_CORE_CMD_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>

struct ks_json;

/*
 * Seconds a command that is still running when the trace ends (-d, a stop
 * signal) has between the signal ksight sends it and SIGKILL.
 */
#define KS_CMD_GRACE_S 5.0

/*
 * One command's life.  ks_cmd_spawn forks it gated: the child waits until
 * ks_cmd_start, so its first system calls come after the attach; it runs in
 * a cgroup made for it under ksight's own (KS_F_CGROUP is the filter: it
 * costs less per event than a pid set that forks extend, bench/hookcost.sh
 * "cgroup" and "follow"), or, where no cgroup can be made (no write access,
 * no cgroup2 mount), followed by that pid set (KS_F_FOLLOW); as the user
 * who ran sudo when SUDO_UID is set.
 */
struct ks_cmd {
	char **argv; /* NULL-terminated, borrowed from the command line */
	char path[PATH_MAX]; /* argv[0] resolved in PATH */
	pid_t pid;	     /* 0: not forked */
	int gate_fd;	     /* one byte on it starts the command */
	int err_fd;	     /* the child's errno when exec (or the user switch) failed; EOF at exec */
	int pidfd;	     /* readable when it exits; -1 when pidfd_open is missing */
	char cgroup[PATH_MAX];
	char parent_cgroup[PATH_MAX];
	__u64 cgroup_id;     /* what bpf_get_current_cgroup_id gives its tasks */
	bool follow;	     /* no cgroup of its own: followed by pid (KS_F_FOLLOW, core/filter.h) */
	bool started, done;
	int status;	     /* wait status, once done */
	int sent;	     /* the signal ksight sent it (0: none) */
	double start_s, end_s; /* CLOCK_MONOTONIC */
	bool drop;	     /* become uid/gid/groups before exec */
	uid_t uid;
	gid_t gid;
	gid_t *groups;
	int ngroups;
};

/*
 * Resolves @argv[0] in PATH, makes the cgroup, forks the gated child and
 * moves it in; where no cgroup can be made or entered, sets @cmd->follow
 * instead (ks_filter_build then makes the pid set).  0, or a negative errno
 * after a one-line p_err: -EINVAL when the command cannot be run or
 * SUDO_UID/SUDO_GID are not ids (bad usage: nothing attached yet), others
 * when the fork fails (then nothing is left: no child, no cgroup).
 * ks_cmd_release undoes a success.
 */
int ks_cmd_spawn(struct ks_cmd *cmd, char **argv);
/*
 * Lets the command run (call once everything is attached) and waits for
 * its exec; installs the SIGCHLD handler that times its end and interrupts
 * the drivers' waits.  0, or negative errno after a one-line p_err.
 */
int ks_cmd_start(struct ks_cmd *cmd);
/* True once the started command has exited (reaped here); false for NULL. */
bool ks_cmd_exited(struct ks_cmd *cmd);
/*
 * Ends a command still running: @sig (SIGTERM when 0; the driver passes the
 * stop signal it got, forwarded), SIGKILL after KS_CMD_GRACE_S; reaps it.
 * NULL or a command already reaped: nothing.
 */
void ks_cmd_stop(struct ks_cmd *cmd, int sig);
/* Stops the command if need be, removes its cgroup (moving what is left in it out), closes and frees; a zeroed @cmd: nothing. */
void ks_cmd_release(struct ks_cmd *cmd);
/* The stderr line: "ksight: command 'CMD' (pid N) exited with status S after T s" or killed by a signal. */
void ks_cmd_say(const struct ks_cmd *cmd);
/* The JSON member "command": argv, pid, state (running, exited, killed), exit_status or signal, wall_s. */
void ks_cmd_write_json(const struct ks_cmd *cmd, struct ks_json *j);

#endif
