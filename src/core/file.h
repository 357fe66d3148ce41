/* Every file ksight writes is opened here: created 0600, close-on-exec, never through a symbolic link. */
#ifndef KS_CORE_FILE_H
#define KS_CORE_FILE_H

#include <stdbool.h>
#include <stdio.h>

/* ks_file_create flags */
#define KS_FILE_TRUNC 1 /* empty an existing regular file (a report, a recording); else it is left as it is */

/*
 * Opens @path for writing, the way every output of ksight is opened
 * (reports, recordings, timelines, profiles, lists).  A new file is made
 * 0600, whatever the umask.  A symbolic link as the last component is
 * refused (-ELOOP): a link planted where a report goes cannot aim it at
 * another file.  A FIFO, terminal or /dev/null is written as it is.
 * O_CLOEXEC, O_NOCTTY.  With KS_FILE_TRUNC, ks_file_empty follows.
 * "-" is standard output: a close-on-exec copy of fd 1, never emptied.
 * *@created (may be NULL): whether this call made the file.  Returns the
 * descriptor, or negative errno; never logs.
 */
int ks_file_create(const char *path, int flags, bool *created);
/*
 * Readies a regular file opened by ks_file_create for new contents: mode
 * 0600 (it is about to hold what a new file would: comms, pids, paths;
 * where this process may write but not chmod it, as it is), emptied.
 * Anything else is left alone.  0 or negative errno.
 */
int ks_file_empty(int fd);
/* Whether @path is "-", standard output, for every -o and output-file option. */
bool ks_file_is_stdout(const char *path);
/* ks_file_create(@path, @flags) as a stdio stream for writing (stdout itself for "-", not to be fclose-d); NULL with errno set. */
FILE *ks_file_fopen(const char *path, int flags);
/*
 * The cause of ks_file_create's @err (negative) on @path, for an error
 * line: "it is a symbolic link; give the target's path" for a link at
 * the last component, else strerror.
 */
const char *ks_file_strerror(const char *path, int err);

/*
 * Makes descriptors 0, 1 and 2 open (on /dev/null where closed), so that
 * no file ksight opens later takes one of their numbers: with stderr
 * closed, an output file opened as fd 2 would receive every diagnostic.
 * Called first thing in main; 0, or negative errno when /dev/null cannot
 * be opened.
 */
int ks_reserve_stdio(void);

#endif
