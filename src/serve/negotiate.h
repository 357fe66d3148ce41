/* Content negotiation for /metrics: the exposition format (Accept) and the encoding (Accept-Encoding), and gzip. */
#ifndef KS_SERVE_NEGOTIATE_H
#define KS_SERVE_NEGOTIATE_H

#include <stddef.h>
#include "output/prom.h"

/* The format an Accept header asks for first (q-values honoured); text when none is known. */
enum prom_format prom_negotiate(const char *accept);
const char *prom_content_type(enum prom_format fmt);

/* What an Accept-Encoding header lets /metrics send: gzip, the body as is, or nothing (406). */
enum prom_encoding { PROM_ENC_IDENTITY, PROM_ENC_GZIP, PROM_ENC_NONE };
/*
 * RFC 9110 12.5.3: gzip (or x-gzip) when its q-value, or that of "*" when it
 * is not named, is above 0 and not below identity's (when named); else
 * identity unless "identity;q=0" (or "*;q=0" without identity named)
 * refuses it.  No header: identity.
 */
enum prom_encoding prom_negotiate_encoding(const char *accept_encoding);
/* @in gzip'd into a new buffer (*@out, malloc'd; *@outlen); 0 or negative errno. */
int prom_gzip(const void *in, size_t len, int level, char **out, size_t *outlen);
#endif
