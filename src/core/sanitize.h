/* One sanitizer for every name ksight did not choose (comm, cgroup paths, pod names, file paths, USDT names, user input) before any output shows it. */
#ifndef KS_CORE_SANITIZE_H
#define KS_CORE_SANITIZE_H

#include <stddef.h>
#include <stdio.h>

/*
 * The rule, the same in every output (text tables, JSON, Prometheus text,
 * OpenMetrics and protobuf, folded, SVG, pprof, trace events, HTML, error
 * messages):
 *   - well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates,
 *     nothing past U+10FFFF) that is not a control character is kept;
 *   - a backslash becomes "\\";
 *   - every other byte becomes "\xNN" (two lowercase hex digits): C0
 *     controls and DEL, both bytes of a C1 control (U+0080..U+009F), and
 *     each byte that does not start a well-formed sequence (a stray
 *     continuation byte, an overlong form, a surrogate, a sequence cut short
 *     such as a 15-byte comm ending inside a 4-byte character).
 * The result is valid UTF-8 without control characters, so any consumer
 * accepts it (Prometheus refuses a whole scrape for one invalid label
 * value), and the mapping is one-to-one: two different names never show as
 * one (which would merge two series) and the bytes can be read back.
 * Invalid bytes are not replaced by U+FFFD because that would merge names.
 * Each format then applies its own quoting to the result (\" in Prometheus
 * and JSON, &amp; in XML, "" in CSV).
 */

/* Longest piece ks_sanitize_next writes, with its terminating NUL. */
#define KS_SAN_PIECE 12

/*
 * The first piece of @s sanitized (one character, or the escape of one or
 * two bytes) into @piece, NUL-terminated; returns how many bytes of @s it
 * covers, 0 at the end of @s (then @piece is "").
 */
size_t ks_sanitize_next(const char *s, char piece[KS_SAN_PIECE]);

/*
 * @s sanitized into @buf (@len bytes, terminated when @len > 0), cut before
 * the first piece that does not fit, never inside one; returns the length
 * written.  A result that was cut is shorter than ks_sanitized_len(@s).
 */
size_t ks_sanitize(const char *s, char *buf, size_t len);
/* Length of @s sanitized, without the NUL. */
size_t ks_sanitized_len(const char *s);

/*
 * The inverse: @s, a sanitized text read back (a recording's JSON holds
 * names sanitized), into @buf as the original bytes: "\\" a backslash,
 * "\xNN" byte NN (but "\x00", which no name holds, and any other backslash
 * stay as they are).  Returns the length written, or -ENOSPC when the bytes
 * and their NUL do not fit in @len.
 */
int ks_unsanitize(const char *s, char *buf, size_t len);

/* A format's quoting of one character of sanitized text: its replacement, or NULL to write it as is. */
typedef const char *ks_quote_fn(char c);
/* Writes @s sanitized to @out, each byte of the result quoted by @quote (NULL: none). */
void ks_sanitize_put(FILE *out, const char *s, ks_quote_fn *quote);

/* XML and HTML quoting (text and attribute values): & < > " as entities. */
const char *ks_quote_xml(char c);

/*
 * Length of the well-formed UTF-8 sequence at @p (RFC 3629: no overlong
 * forms, no surrogates, nothing past U+10FFFF), or 0 (also at the NUL).
 */
int ks_utf8_len(const unsigned char *p);

#endif
