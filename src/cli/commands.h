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
int cmd_version(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_info(int argc, char **argv);

#define KSIGHT_VERSION "0.1.0"
int cmd_serve(int argc, char **argv);
int cmd_unpin(int argc, char **argv);

#endif
