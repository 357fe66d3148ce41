/* One error and log path for the whole tool: p_err/p_warn/p_info/p_dbg, JSON error objects under -j. */
#ifndef KS_CORE_LOG_H
#define KS_CORE_LOG_H

#include <stdbool.h>

/* The only global state: verbosity (-v) and output format (-j). */
extern int ks_verbose;
extern bool ks_json;

void p_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void p_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void p_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void p_dbg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Routes libbpf's messages through p_warn/p_dbg. */
void ks_log_setup_libbpf(void);

#endif
