/* `-- CMD`: starts the command gated behind the attach, in a cgroup of its own (else followed by pid), as the sudo user; times and reaps it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "core/cmd.h"
#include "core/filter.h"
#include "core/json.h"
#include "core/log.h"
#include "core/parse.h"
#include "core/procfs.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/* the name of a command's cgroup, below ksight's own: ksight's pid makes it unique and tells a stale one */
#define CG_PREFIX "ksight-cmd-"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The command's exit as SIGCHLD saw it: its time, and a wait (poll, ring buffer) interrupted at once. */
static volatile pid_t chld_pid;
static volatile sig_atomic_t chld_seen;
static struct timespec chld_ts;

static void on_sigchld(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (si->si_pid == chld_pid && si->si_code != CLD_STOPPED && si->si_code != CLD_CONTINUED && !chld_seen) {
		clock_gettime(CLOCK_MONOTONIC, &chld_ts);
		chld_seen = 1;
	}
}

/* @name as execvp would find it (a name with a slash as it is), into @out; -ENOENT or -EACCES. */
static int resolve(const char *name, char *out, size_t len)
{
	const char *path = getenv("PATH");
	int err = -ENOENT;

	if (!*name)
		return -ENOENT;
	if (strchr(name, '/')) {
		if (snprintf(out, len, "%s", name) >= (int)len)
			return -ENAMETOOLONG;
		return access(out, X_OK) ? -errno : 0;
	}
	/* as glibc's execvp when PATH is unset */
	if (!path)
		path = "/bin:/usr/bin";
	for (const char *p = path; p;) {
		const char *e = strchr(p, ':');
		int n = e ? (int)(e - p) : (int)strlen(p);
		struct stat st;

		/* an empty entry is the current directory */
		if (snprintf(out, len, "%.*s%s%s", n, p, n ? "/" : "", name) < (int)len && !stat(out, &st) &&
		    S_ISREG(st.st_mode)) {
			if (!access(out, X_OK))
				return 0;
			err = -EACCES;
		}
		p = e ? e + 1 : NULL;
	}
	return err;
}

/* Under sudo (root, SUDO_UID set and not 0): the user, group and groups to run the command as. */
static int sudo_user(struct ks_cmd *cmd)
{
	const char *su = getenv("SUDO_UID"), *sg = getenv("SUDO_GID");
	struct passwd *pw;
	uint64_t uid, gid;
	int n = 0;

	if (geteuid() != 0 || !su)
		return 0;
	if (ks_parse_u64(su, 0, 0xfffffffe, &uid) || !sg || ks_parse_u64(sg, 0, 0xfffffffe, &gid)) {
		p_err("-- CMD: SUDO_UID '%s' or SUDO_GID '%s' is not a user and group id; unset them to run the command as root",
		      KS_ESC(su), sg ? KS_ESC(sg) : "");
		return -EINVAL;
	}
	if (!uid)
		return 0;
	cmd->drop = true;
	cmd->uid = (uid_t)uid;
	cmd->gid = (gid_t)gid;
	/* the user's supplementary groups, as sudo's own login would give them; just the group when unknown */
	pw = getpwuid(cmd->uid);
	if (pw)
		getgrouplist(pw->pw_name, cmd->gid, NULL, &n);
	cmd->groups = calloc((size_t)(n > 0 ? n : 1), sizeof(gid_t));
	if (!cmd->groups)
		return -ENOMEM;
	if (!pw || n <= 0 || getgrouplist(pw->pw_name, cmd->gid, cmd->groups, &n) < 0) {
		cmd->groups[0] = cmd->gid;
		n = 1;
	}
	cmd->ngroups = n;
	return 0;
}

/* Removes the cgroups of earlier runs that died before removing theirs (kill -9): empty ones whose ksight is gone. */
static void sweep_stale(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		uint64_t pid;
		char p[PATH_MAX];

		if (strncmp(e->d_name, CG_PREFIX, strlen(CG_PREFIX)) ||
		    ks_parse_u64(e->d_name + strlen(CG_PREFIX), 1, 0x7fffffff, &pid) || (pid_t)pid == getpid() ||
		    !kill((pid_t)pid, 0) || errno != ESRCH)
			continue;
		/* one still holding processes stays (EBUSY): they are someone's */
		if (snprintf(p, sizeof(p), "%s/%s", dir, e->d_name) < (int)sizeof(p))
			rmdir(p);
	}
	closedir(d);
}

/*
 * Makes the command's cgroup below ksight's own v2 cgroup: it stays under the
 * same limits and delegation (a user's delegated cgroup, as systemd gives
 * user@UID.service, is writable).  0, or negative errno with @why saying
 * what was missing: the caller then follows the command by pid.
 */
static int make_cgroup(struct ks_cmd *cmd, char *why, size_t len)
{
	const char *mnt = ks_cgroup2_mount();
	char buf[4096], *own = NULL, *save = NULL;
	int err;

	if (!mnt) {
		snprintf(why, len, "no cgroup v2 hierarchy is mounted");
		return -ENODEV;
	}
	err = ks_procfs_read(NULL, "/proc/self/cgroup", buf, sizeof(buf));
	for (char *l = err < 0 ? NULL : strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		if (!strncmp(l, "0::", 3))
			own = l + 3;
	if (!own) {
		snprintf(why, len, "ksight's own cgroup v2 is not in /proc/self/cgroup");
		return -ENOENT;
	}
	/* "/" is the root: no doubled slash */
	if (snprintf(cmd->parent_cgroup, sizeof(cmd->parent_cgroup), "%s%s", mnt, strcmp(own, "/") ? own : "") >=
		    (int)sizeof(cmd->parent_cgroup) ||
	    snprintf(cmd->cgroup, sizeof(cmd->cgroup), "%s/" CG_PREFIX "%d", cmd->parent_cgroup, (int)getpid()) >=
		    (int)sizeof(cmd->cgroup)) {
		cmd->cgroup[0] = 0;
		snprintf(why, len, "the cgroup path below '%s' is too long", KS_ESC(own));
		return -ENAMETOOLONG;
	}
	sweep_stale(cmd->parent_cgroup);
	if (mkdir(cmd->cgroup, 0755)) {
		err = -errno;
		snprintf(why, len, "cannot make cgroup '%s': %s", cmd->cgroup, strerror(-err));
		cmd->cgroup[0] = 0;
		return err;
	}
	err = ks_cgroup_id(cmd->cgroup, &cmd->cgroup_id);
	if (err)
		snprintf(why, len, "cannot read the id of cgroup '%s': %s", cmd->cgroup, strerror(-err));
	return err;
}

/* Writes @pid into cgroup.procs of @dir: 0 or -errno. */
static int move_to(const char *dir, pid_t pid)
{
	char p[PATH_MAX + 16], s[16];
	int fd, n, err = 0;

	snprintf(p, sizeof(p), "%s/cgroup.procs", dir);
	fd = open(p, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = snprintf(s, sizeof(s), "%d", (int)pid);
	if (write(fd, s, (size_t)n) != n)
		err = -errno;
	close(fd);
	return err;
}

/* The forked side: waits at the gate, becomes the sudo user, execs; a failure's errno goes back on @errfd. */
static __attribute__((noreturn)) void child(const struct ks_cmd *cmd, int gatefd, int errfd)
{
	sigset_t all;
	char b;
	ssize_t n;
	int e;

	/* ksight's handlers and mask are not the command's: a Ctrl-C at the gate ends it as it would the command */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	signal(SIGCHLD, SIG_DFL);
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	do
		n = read(gatefd, &b, 1);
	while (n < 0 && errno == EINTR);
	/* EOF: ksight ended (or failed) before the attach; the command never runs */
	if (n != 1)
		_exit(127);
	if (cmd->drop && (setgroups((size_t)cmd->ngroups, cmd->groups) || setgid(cmd->gid) || setuid(cmd->uid)))
		goto fail;
	execv(cmd->path, cmd->argv);
fail:
	e = errno;
	if (write(errfd, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

int ks_cmd_spawn(struct ks_cmd *cmd, char **argv)
{
	int gate[2] = { -1, -1 }, errp[2] = { -1, -1 }, err;
	char why[PATH_MAX + 128];

	memset(cmd, 0, sizeof(*cmd));
	cmd->argv = argv;
	cmd->gate_fd = cmd->err_fd = cmd->pidfd = -1;
	err = resolve(argv[0], cmd->path, sizeof(cmd->path));
	if (err) {
		p_err(err == -ENOENT && !strchr(argv[0], '/') ? "cannot run '%s': command not found in PATH"
							      : "cannot run '%s': %s",
		      KS_ESC(argv[0]), strerror(-err));
		return -EINVAL;
	}
	err = sudo_user(cmd);
	if (err)
		goto fail;
	/* no cgroup (no write access, no mount, ip netns exec): a pid set its forks extend, ks_filter_build's */
	if (make_cgroup(cmd, why, sizeof(why))) {
		if (cmd->cgroup[0])
			rmdir(cmd->cgroup);
		cmd->cgroup[0] = 0;
		cmd->follow = true;
	}
	/* a socket, not a pipe: opening the gate of a child that died (a Ctrl-C) must not raise SIGPIPE in ksight */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, gate) || pipe2(errp, O_CLOEXEC)) {
		err = -errno;
		p_err("-- CMD: cannot set up the command's start: %s", strerror(-err));
		goto fail;
	}
	fflush(NULL); /* nothing buffered is written twice */
	cmd->pid = fork();
	if (cmd->pid < 0) {
		err = -errno;
		cmd->pid = 0;
		p_err("-- CMD: cannot fork: %s", strerror(-err));
		goto fail;
	}
	if (cmd->pid == 0) {
		close(gate[0]);
		close(errp[0]);
		child(cmd, gate[1], errp[1]);
	}
	close(gate[1]);
	close(errp[1]);
	cmd->gate_fd = gate[0];
	cmd->err_fd = errp[0];
	gate[0] = gate[1] = errp[0] = errp[1] = -1; /* cmd's now: ks_cmd_release closes them */
	cmd->pidfd = (int)syscall(SYS_pidfd_open, cmd->pid, 0);
	/* in its cgroup before it runs anything: its first system call is seen, and every fork inherits it */
	err = cmd->follow ? 0 : move_to(cmd->cgroup, cmd->pid);
	if (err) {
		/* a cgroup made but not entered (cgroup.procs of the common parent not writable): followed by pid */
		snprintf(why, sizeof(why), "cannot move it into cgroup '%s': %s", cmd->cgroup, strerror(-err));
		rmdir(cmd->cgroup);
		cmd->cgroup[0] = 0;
		cmd->follow = true;
	}
	if (cmd->follow)
		p_info("-- CMD: the command and its children are followed by pid (a set its forks extend): %s", why);
	else
		p_info("-- CMD: the command and its children are followed in cgroup '%s'", cmd->cgroup);
	return 0;
fail:
	for (int i = 0; i < 2; i++) {
		if (gate[i] >= 0)
			close(gate[i]);
		if (errp[i] >= 0)
			close(errp[i]);
	}
	ks_cmd_release(cmd);
	return err;
}

/* Records the reaped wait status @st: the end is when SIGCHLD came, or now when it went to no handler. */
static void reaped(struct ks_cmd *cmd, int st)
{
	cmd->done = true;
	cmd->status = st;
	cmd->end_s = chld_seen && chld_pid == cmd->pid
			     ? (double)chld_ts.tv_sec + (double)chld_ts.tv_nsec / 1e9
			     : now_s();
}

int ks_cmd_start(struct ks_cmd *cmd)
{
	struct sigaction sa = { .sa_sigaction = on_sigchld, .sa_flags = SA_SIGINFO | SA_NOCLDSTOP };
	ssize_t n;
	int e = 0, st;

	/* no SA_RESTART: the drivers' poll and the ring buffers' epoll return at the exit */
	sigemptyset(&sa.sa_mask);
	chld_seen = 0;
	chld_pid = cmd->pid;
	sigaction(SIGCHLD, &sa, NULL);
	cmd->start_s = now_s();
	if (send(cmd->gate_fd, "x", 1, MSG_NOSIGNAL) != 1) {
		e = errno;
	} else {
		do
			n = read(cmd->err_fd, &e, sizeof(e));
		while (n < 0 && errno == EINTR);
		if (n != (ssize_t)sizeof(e))
			e = 0; /* EOF: exec closed the pipe */
	}
	close(cmd->gate_fd);
	cmd->gate_fd = -1;
	if (e) {
		/* it ends at once (_exit 127) or has already: reaped, not left a zombie */
		if (waitpid(cmd->pid, &st, 0) == cmd->pid)
			reaped(cmd, st);
		p_err("cannot run '%s': %s", KS_ESC(cmd->argv[0]), strerror(e));
		return -e;
	}
	cmd->started = true;
	return 0;
}

bool ks_cmd_exited(struct ks_cmd *cmd)
{
	int st;

	if (!cmd || !cmd->started)
		return false;
	if (!cmd->done && waitpid(cmd->pid, &st, WNOHANG) == cmd->pid)
		reaped(cmd, st);
	return cmd->done;
}

/* Waits up to @secs for the command's end; true when it was reaped. */
static bool wait_end(struct ks_cmd *cmd, double secs)
{
	double end = now_s() + secs;

	while (!cmd->done) {
		int st, ms = (int)((end - now_s()) * 1000);

		if (waitpid(cmd->pid, &st, WNOHANG) == cmd->pid) {
			reaped(cmd, st);
			break;
		}
		if (ms <= 0)
			return false;
		/* the pidfd turns readable at the exit; without one, in steps of 10 ms */
		if (cmd->pidfd >= 0)
			poll(&(struct pollfd){ .fd = cmd->pidfd, .events = POLLIN }, 1, ms);
		else
			poll(NULL, 0, ms < 10 ? ms : 10);
	}
	return true;
}

void ks_cmd_stop(struct ks_cmd *cmd, int sig)
{
	int st;

	if (!cmd || cmd->pid <= 0 || cmd->done)
		return;
	if (!cmd->started) {
		/* still at the gate: closing it ends the child without running anything */
		if (cmd->gate_fd >= 0) {
			close(cmd->gate_fd);
			cmd->gate_fd = -1;
		}
		if (!wait_end(cmd, KS_CMD_GRACE_S)) {
			kill(cmd->pid, SIGKILL);
			if (waitpid(cmd->pid, &st, 0) == cmd->pid)
				reaped(cmd, st);
		}
		return;
	}
	if (ks_cmd_exited(cmd))
		return;
	cmd->sent = sig ? sig : SIGTERM;
	kill(cmd->pid, cmd->sent);
	if (wait_end(cmd, KS_CMD_GRACE_S))
		return;
	p_warn("command '%s' (pid %d) still runs %.0f s after signal %d: killing it", KS_ESC(cmd->argv[0]),
	       (int)cmd->pid, KS_CMD_GRACE_S, cmd->sent);
	cmd->sent = SIGKILL;
	kill(cmd->pid, SIGKILL);
	if (waitpid(cmd->pid, &st, 0) == cmd->pid)
		reaped(cmd, st);
}

/* Moves what the command left in its cgroup (children that outlive it) to ksight's, so the cgroup can go. */
static void empty_cgroup(struct ks_cmd *cmd)
{
	char p[PATH_MAX + 16], buf[4096], *save = NULL;
	uint64_t pid;

	snprintf(p, sizeof(p), "%s/cgroup.procs", cmd->cgroup);
	if (ks_procfs_read(NULL, p, buf, sizeof(buf)) <= 0)
		return;
	for (char *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		if (!ks_parse_u64(l, 1, 0x7fffffff, &pid))
			move_to(cmd->parent_cgroup, (pid_t)pid);
}

void ks_cmd_release(struct ks_cmd *cmd)
{
	/* a zeroed struct never spawned: its fds are not its own */
	if (!cmd || !cmd->argv)
		return;
	ks_cmd_stop(cmd, SIGKILL);
	if (cmd->cgroup[0]) {
		/* a few rounds: a child may fork while it is moved */
		for (int i = 0; i < 4 && rmdir(cmd->cgroup) && errno == EBUSY; i++)
			empty_cgroup(cmd);
		if (!access(cmd->cgroup, F_OK) && rmdir(cmd->cgroup))
			p_warn("cannot remove the command's cgroup '%s': %s", cmd->cgroup, strerror(errno));
		cmd->cgroup[0] = 0;
	}
	if (cmd->gate_fd >= 0)
		close(cmd->gate_fd);
	if (cmd->err_fd >= 0)
		close(cmd->err_fd);
	if (cmd->pidfd >= 0)
		close(cmd->pidfd);
	cmd->gate_fd = cmd->err_fd = cmd->pidfd = -1;
	if (cmd->follow)
		ks_follow_release();
	free(cmd->groups);
	cmd->groups = NULL;
}

/* The command line, as one string for messages (cut at @len). */
static const char *cmdline(const struct ks_cmd *cmd, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	for (char **a = cmd->argv; *a && n < len; a++) {
		int k = snprintf(buf + n, len - n, "%s%s", a == cmd->argv ? "" : " ", *a);

		if (k < 0)
			break;
		n += (size_t)k;
	}
	return buf;
}

void ks_cmd_say(const struct ks_cmd *cmd)
{
	char line[256];
	uint64_t missed;

	if (!cmd || !cmd->done || !cmd->started)
		return;
	cmdline(cmd, line, sizeof(line));
	missed = cmd->follow ? ks_follow_missed() : 0;
	if (missed)
		p_warn("-- CMD: %llu processes the command made were not followed (the set of followed pids was full): "
		       "their events are missing; give a larger --max-memory",
		       (unsigned long long)missed);
	if (WIFEXITED(cmd->status))
		fprintf(stderr, "ksight: command '%s' (pid %d) exited with status %d after %.3f s\n", KS_ESC(line),
			(int)cmd->pid, WEXITSTATUS(cmd->status), cmd->end_s - cmd->start_s);
	else if (WIFSIGNALED(cmd->status))
		fprintf(stderr, "ksight: command '%s' (pid %d) was killed by signal %d (%s)%s after %.3f s\n", KS_ESC(line),
			(int)cmd->pid, WTERMSIG(cmd->status), strsignal(WTERMSIG(cmd->status)),
			cmd->sent == WTERMSIG(cmd->status) ? ", sent by ksight" : "", cmd->end_s - cmd->start_s);
}

void ks_cmd_write_json(const struct ks_cmd *cmd, struct ks_json *j)
{
	ks_json_key(j, "command");
	ks_json_obj_begin(j);
	ks_json_key(j, "argv");
	ks_json_arr_begin(j);
	for (char **a = cmd->argv; *a; a++)
		ks_json_str(j, *a);
	ks_json_arr_end(j);
	ks_json_kv_u64(j, "pid", (uint64_t)cmd->pid);
	ks_json_kv_str(j, "state", !cmd->done ? "running" : WIFEXITED(cmd->status) ? "exited" : "killed");
	if (cmd->done && WIFEXITED(cmd->status))
		ks_json_kv_u64(j, "exit_status", (uint64_t)WEXITSTATUS(cmd->status));
	if (cmd->done && WIFSIGNALED(cmd->status))
		ks_json_kv_u64(j, "signal", (uint64_t)WTERMSIG(cmd->status));
	ks_json_key(j, "sent_by_ksight");
	if (cmd->sent)
		ks_json_u64(j, (uint64_t)cmd->sent);
	else
		ks_json_null(j);
	ks_json_kv_double(j, "wall_s", cmd->started ? (cmd->done ? cmd->end_s : now_s()) - cmd->start_s : 0);
	ks_json_obj_end(j);
}
