/* --anonymize: comm, paths, user names, IP addresses and kernel pointers in recorded events replaced by stable keyed hashes (SipHash-2-4). */
#ifndef KS_EVENTS_ANON_H
#define KS_EVENTS_ANON_H

#include <stddef.h>
#include <stdint.h>
#include "format/recfile.h"

struct tep_event;
struct ks_recording;

struct ks_anon {
	uint64_t k0, k1; /* the key: random per recording, or from --anonymize-key */
	char **users;	 /* login names of this host's users (uid >= 1000): strings equal to one are replaced */
	int nusers;
};

/* A key from @key_text, or a random one when NULL; 0 or -errno. */
int ks_anon_init(struct ks_anon *a, const char *key_text);
void ks_anon_free(struct ks_anon *a);

/* SipHash-2-4 of @len bytes with key (@k0, @k1). */
uint64_t ks_siphash(uint64_t k0, uint64_t k1, const void *data, size_t len);

/*
 * The token of @s (@n bytes) of kind @kind ('c' comm, 'p' path, 'u' user,
 * 'h' host, 'a' argument) into @out, cut to @outlen - 1 characters: the
 * same input and key give the same token.
 */
void ks_anon_token(const struct ks_anon *a, char kind, const char *s, size_t n, char *out, size_t outlen);

/*
 * Writes @in (an event of @ev) into @out (@cap bytes) with its comm, its
 * comm fields, path-like and user-name strings, IP address fields and
 * kernel pointers (ks_anon_ptr) replaced.  Returns the new raw length (out->len), or -ENOSPC.
 */
int ks_anon_event(const struct ks_anon *a, const struct tep_event *ev, const struct ks_rec_event *in,
		  struct ks_rec_event *out, size_t cap);

/* The token of kernel pointer @v: a keyed hash below 2^47, 0 for 0; the same @v gives the same token. */
uint64_t ks_anon_ptr(const struct ks_anon *a, uint64_t v);

/* Replaces every event of @rec (report --anonymize); 0 or -ENOMEM. */
int ks_anon_recording(const struct ks_anon *a, struct ks_recording *rec);

/* The manifest lines @m with host, comm and cgroup filters and path-like arguments replaced, into @out. */
void ks_anon_manifest(const struct ks_anon *a, const char *m, size_t len, struct ks_rec_kv *out);

#endif
