/* What the flame-graph writers share (svg.c, diff's diff_svg.c): a frame's label cut to its width at a character, and XML quoting of sanitized text. */
#ifndef KS_OUTPUT_SVG_H
#define KS_OUTPUT_SVG_H

#include <stdio.h>

/* The first @n bytes of @s, sanitized text (ks_sanitize: valid UTF-8, no controls), quoted for XML. */
void ks_svg_put(FILE *out, const char *s, size_t n);
/* The label of a frame @pw pixels wide from sanitized @name: the characters that fit at 7 px, ".." when cut, none under 3. */
void ks_svg_label(FILE *out, const char *name, double pw);

#endif
