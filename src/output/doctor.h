/* Doctor's writers: the checks as text or JSON, and the machine's facts as a JSON object. */
#ifndef KS_OUTPUT_DOCTOR_H
#define KS_OUTPUT_DOCTOR_H

#include <stdbool.h>
#include <stdio.h>
#include "core/checks.h"
#include "core/json.h"
#include "core/sysinfo.h"

/* Text: one line per check, impact and fix below it; @verbose adds the detail lines. */
int ks_checks_write_text(const struct ks_checks *l, FILE *out, bool verbose);
/* One JSON document: {"kernel", "checks": [...], "tracing_possible", "system"}. */
int ks_checks_write_json(const struct ks_checks *l, FILE *out, bool verbose);

/* Writes @si as one JSON object (the value of the current key or array slot). */
void ks_sysinfo_write_json(const struct ks_sysinfo *si, struct ks_json *j);

#endif
