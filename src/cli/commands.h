/* The command table entry and the commands that are not collectors. */
#ifndef KS_CLI_COMMANDS_H
#define KS_CLI_COMMANDS_H

struct ks_command {
	const char *name;
	int (*fn)(int argc, char **argv); /* argv[0] is the command name; returns the exit code */
	const char *summary;
};

int cmd_doctor(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_offcpu(int argc, char **argv);
int cmd_syscalls(int argc, char **argv);
int cmd_biolat(int argc, char **argv);
int cmd_wall(int argc, char **argv);
int cmd_version(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_info(int argc, char **argv);

int cmd_rerun(int argc, char **argv);
int cmd_diff(int argc, char **argv);

struct ks_cmd_spec;
struct ks_common;
/* Options of a command that takes one FILE, before or after it (report.c); FILE, or NULL with *@rc the exit code. */
const char *parse_file_args(const struct ks_cmd_spec *spec, int argc, char **argv, struct ks_common *c,
			    int (*cb)(void *ctx, int id, const char *arg), void *ctx, int *rc);

/* Runs command or collector @name with @argv (main.c); its exit code. */
typedef int (*ks_dispatch_fn)(const char *name, int argc, char **argv);
/* `ksight help --man [CMD]`, `ksight help --completion bash|zsh` (help.c): @argv is main's; the exit code. */
int ks_help_gen(const struct ks_command *cmds, ks_dispatch_fn dispatch, int argc, char **argv);

#include "core/version.h" /* KSIGHT_VERSION */
int cmd_serve(int argc, char **argv);
int cmd_unpin(int argc, char **argv);
int cmd_top(int argc, char **argv);

#endif
