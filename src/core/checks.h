/* The doctor's verdicts: a list of checks judged from environment facts and feature probes, and its two writers. */
#ifndef KS_CORE_CHECKS_H
#define KS_CORE_CHECKS_H

#include <stdbool.h>
#include <stdio.h>
#include "core/probe.h"
#include "core/sysinfo.h"

enum ks_status {
	KS_ST_OK,
	KS_ST_WARN,    /* works, with a loss the user should know about */
	KS_ST_MISSING, /* not available on this machine */
};

#define KS_CHECK_TEXT 256
#define KS_MAX_CHECKS 32

struct ks_check {
	const char *name;	     /* stable identifier, e.g. "tp_btf", "perf_event_paranoid" */
	enum ks_status status;
	char value[KS_CHECK_TEXT];   /* what was found */
	char impact[KS_CHECK_TEXT];  /* what the user loses; "" when OK */
	char fix[KS_CHECK_TEXT];     /* how to get it back; "" when OK */
	char detail[KS_CHECK_TEXT];  /* -v: where the value came from, errno and step of a failed probe */
};

struct ks_checks {
	char kernel[65]; /* release */
	int n;
	struct ks_check c[KS_MAX_CHECKS];
	bool tracing_possible;
	char summary[KS_CHECK_TEXT];   /* one line: why tracing is or is not possible */
	const struct ks_sysinfo *si;   /* written as "system" in JSON when set */
};

/* Everything the judgement depends on, as data: the CLI fills it from the machine, tests from fixtures. */
struct ks_doctor_input {
	const struct ks_sysinfo *si;
	struct ks_probe_result probe[KS_FEAT_COUNT];
	bool tracefs_mounted; /* tracefs was absent and the doctor mounted it */
	int tracefs_err;      /* negative errno when tracefs could not be had, else 0 */
	/*
	 * Kernel BTF members a collector reads without a fallback (ks_btf_needs,
	 * in that order): 1 present, 0 absent.  Judged only when @btf_needs_known.
	 */
	bool btf_needs_known;
	signed char btf_needs[2];
};

/* The oldest kernel every collector loads on (docs/kernels.md, doctor's kernel_min). */
#define KS_KERNEL_MIN_MAJOR 5
#define KS_KERNEL_MIN_MINOR 15

/* A kernel BTF member a collector reads with no CO-RE fallback, and the release that added it. */
struct ks_btf_need {
	const char *collector, *check, *type, *member, *since; /* check: the doctor line's name, "<collector>_btf" */
};
extern const struct ks_btf_need ks_btf_needs[2];

const char *ks_status_name(enum ks_status s);

void ks_checks_init(struct ks_checks *l, const char *kernel);
/* Appends a check with its value; NULL (and -ENOSPC in errno) when the list is full. */
struct ks_check *ks_checks_add(struct ks_checks *l, const char *name, enum ks_status st, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void ks_check_set_impact(struct ks_check *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ks_check_set_fix(struct ks_check *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ks_check_set_detail(struct ks_check *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const struct ks_check *ks_checks_find(const struct ks_checks *l, const char *name);

/*
 * Judges @in into @l: one check per fact, with impact and fix when not
 * OK, and whether tracing is possible at all (kernel BTF and at least one
 * kernel hook type).  Returns 0 or -ENOSPC.
 */
int ks_checks_evaluate(const struct ks_doctor_input *in, struct ks_checks *l);

#endif
