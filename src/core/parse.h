/* Checked parsing of every number the user types: integers, durations with units, CPU lists. */
#ifndef KS_CORE_PARSE_H
#define KS_CORE_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* Whole string must be a decimal integer in [min, max]; -EINVAL / -ERANGE. */
int ks_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* Seconds, with an optional unit: "5", "1.5", "250ms", "20us", "500ns", "2s", "1m", "1h". Negative is -ERANGE. */
int ks_parse_seconds(const char *s, double *out);
/* Sizes with an optional K/M/G suffix (powers of 1024). */
int ks_parse_size(const char *s, uint64_t *out);
/* "0-3,6,8-9" into a bitmap of @nbits bits (64-bit words); -EINVAL / -ERANGE. */
int ks_parse_cpulist(const char *s, uint64_t *bits, unsigned int nbits);

/*
 * @s sanitized (core/sanitize.h: control bytes and invalid UTF-8 as \xNN)
 * into @buf, cut with "..." when it does not fit: user input echoed in a
 * one-line error stays one line and cannot drive the terminal.  Returns @buf.
 */
const char *ks_escape(const char *s, char *buf, size_t len);
/* ks_escape into a buffer that lives until the end of the enclosing statement's block. */
#define KS_ESC(s) ks_escape((s), (char[256]){ 0 }, 256)

#endif
