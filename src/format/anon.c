/* --anonymize: keyed, stable tokens for comm, paths, user names and IP addresses in recorded events and manifests. */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <event-parse.h>
#include "format/anon.h"
#include "format/pair.h"
#include "format/recording.h"

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

static void sip_round(uint64_t *v)
{
	v[0] += v[1];
	v[1] = ROTL(v[1], 13);
	v[1] ^= v[0];
	v[0] = ROTL(v[0], 32);
	v[2] += v[3];
	v[3] = ROTL(v[3], 16);
	v[3] ^= v[2];
	v[0] += v[3];
	v[3] = ROTL(v[3], 21);
	v[3] ^= v[0];
	v[2] += v[1];
	v[1] = ROTL(v[1], 17);
	v[1] ^= v[2];
	v[2] = ROTL(v[2], 32);
}

/* SipHash-2-4 (Aumasson and Bernstein): a keyed PRF, so a token reveals nothing without the key. */
uint64_t ks_siphash(uint64_t k0, uint64_t k1, const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t v[4] = { k0 ^ 0x736f6d6570736575ull, k1 ^ 0x646f72616e646f6dull, k0 ^ 0x6c7967656e657261ull,
			  k1 ^ 0x7465646279746573ull };
	uint64_t m, last = (uint64_t)len << 56;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		m = 0;
		for (int b = 0; b < 8; b++)
			m |= (uint64_t)p[i + b] << (8 * b);
		v[3] ^= m;
		sip_round(v);
		sip_round(v);
		v[0] ^= m;
	}
	for (int b = 0; i + (size_t)b < len; b++)
		last |= (uint64_t)p[i + (size_t)b] << (8 * b);
	v[3] ^= last;
	sip_round(v);
	sip_round(v);
	v[0] ^= last;
	v[2] ^= 0xff;
	for (int r = 0; r < 4; r++)
		sip_round(v);
	return v[0] ^ v[1] ^ v[2] ^ v[3];
}

int ks_anon_init(struct ks_anon *a, const char *key_text)
{
	struct passwd *pw;

	memset(a, 0, sizeof(*a));
	if (key_text) {
		/* the text itself is not the key: two fixed-key hashes of it are */
		a->k0 = ks_siphash(0, 0, key_text, strlen(key_text));
		a->k1 = ks_siphash(1, 0, key_text, strlen(key_text));
	} else {
		uint64_t k[2];

		if (getrandom(k, sizeof(k), 0) != (ssize_t)sizeof(k))
			return -errno;
		a->k0 = k[0];
		a->k1 = k[1];
	}
	setpwent();
	while ((pw = getpwent())) {
		char **n;

		/* people, not system accounts (whose names say nothing about anyone) */
		if (pw->pw_uid < 1000 || pw->pw_uid == 65534 || !pw->pw_name[0])
			continue;
		n = realloc(a->users, (size_t)(a->nusers + 1) * sizeof(*n));
		if (!n || !(n[a->nusers] = strdup(pw->pw_name))) {
			if (n)
				a->users = n;
			endpwent();
			ks_anon_free(a);
			return -ENOMEM;
		}
		a->users = n;
		a->nusers++;
	}
	endpwent();
	return 0;
}

void ks_anon_free(struct ks_anon *a)
{
	for (int i = 0; i < a->nusers; i++)
		free(a->users[i]);
	free(a->users);
	a->users = NULL;
	a->nusers = 0;
}

void ks_anon_token(const struct ks_anon *a, char kind, const char *s, size_t n, char *out, size_t outlen)
{
	static const char *const prefix[] = { "c-", "path-", "user-", "host-", "arg-" };
	const char *kinds = "cpuha", *k = strchr(kinds, kind);
	/* the kind is in the key: the same text as a comm and as a path gives two tokens */
	uint64_t h = ks_siphash(a->k0, a->k1 ^ (uint64_t)(unsigned char)kind, s, n);

	if (kind == 'c') /* 14 characters: whole in a 16-byte comm */
		snprintf(out, outlen, "c-%012llx", (unsigned long long)(h & 0xffffffffffffull));
	else
		snprintf(out, outlen, "%s%016llx", k ? prefix[k - kinds] : "x-", (unsigned long long)h);
}

static bool is_user(const struct ks_anon *a, const char *s)
{
	for (int i = 0; i < a->nusers; i++)
		if (!strcmp(a->users[i], s))
			return true;
	return false;
}

/* The kind of token a string field's value @s needs, or 0 to keep it. */
static char string_kind(const struct ks_anon *a, const char *name, const char *s)
{
	size_t nl = strlen(name);

	if (!*s)
		return 0;
	if (nl >= 4 && !strcmp(name + nl - 4, "comm"))
		return 'c';
	if (is_user(a, s))
		return 'u';
	if (strchr(s, '/'))
		return 'p';
	return 0;
}

/* An IP address of @n bytes at @p (4: IPv4, 16: IPv6) replaced by one of the same family from its hash. */
static void anon_ip(const struct ks_anon *a, unsigned char *p, size_t n)
{
	uint64_t h1 = ks_siphash(a->k0, a->k1 ^ 0x1b, p, n), h2 = ks_siphash(a->k0 ^ 0x1b, a->k1, p, n);

	if (n == 4) {
		/* 10.0.0.0/8: still an address to tools, and plainly not a real peer */
		p[0] = 10;
		memcpy(p + 1, &h1, 3);
	} else {
		/* fd00::/8, the unique-local prefix */
		p[0] = 0xfd;
		memcpy(p + 1, &h1, 8);
		memcpy(p + 9, &h2, 7);
	}
}

static bool addr_field(const struct tep_format_field *f)
{
	/* __u8 saddr[4] is flagged a string by libtraceevent too: only char arrays are text */
	return strstr(f->name, "addr") && !(f->flags & (TEP_FIELD_IS_DYNAMIC | TEP_FIELD_IS_POINTER)) &&
	       !((f->flags & TEP_FIELD_IS_STRING) && strstr(f->type, "char"));
}

static void anon_addr(const struct ks_anon *a, const struct tep_format_field *f, unsigned char *raw)
{
	unsigned char *p = raw + f->offset;
	uint16_t fam;

	if (f->size == 4 || f->size == 16) {
		anon_ip(a, p, (size_t)f->size);
	} else if (f->size == 28) {
		/* room for a struct sockaddr_in6, holding either family (tcp:tcp_probe) */
		memcpy(&fam, p, 2);
		if (fam == 2)
			anon_ip(a, p + 4, 4);
		else if (fam == 10)
			anon_ip(a, p + 8, 16);
	}
}

int ks_anon_event(const struct ks_anon *a, const struct tep_event *ev, const struct ks_rec_event *in,
		  struct ks_rec_event *out, size_t cap)
{
	unsigned char *raw = (unsigned char *)(out + 1);
	uint32_t len = in->len;
	char comm[17], tok[40];

	if (cap < sizeof(*out) + in->len)
		return -ENOSPC;
	memcpy(out, in, sizeof(*out) + in->len);
	memcpy(comm, in->comm, 16);
	comm[16] = '\0';
	if (comm[0]) {
		ks_anon_token(a, 'c', comm, strlen(comm), tok, sizeof(out->comm));
		memset(out->comm, 0, sizeof(out->comm));
		memcpy(out->comm, tok, strlen(tok));
	}
	for (struct tep_format_field *f = ev->format.fields; f; f = f->next) {
		uint32_t off, n;
		size_t sl;
		char kind;
		bool dyn = (f->flags & TEP_FIELD_IS_DYNAMIC) && f->size == 4;

		if (addr_field(f)) {
			if ((uint32_t)(f->offset + f->size) <= len)
				anon_addr(a, f, raw);
			continue;
		}
		if (!strstr(f->type, "char") ||
		    (!(f->flags & TEP_FIELD_IS_STRING) && !((f->flags & TEP_FIELD_IS_ARRAY) && f->elementsize == 1)))
			continue;
		ks_field_span(f, raw, &off, &n);
		if (!n || off + n > len)
			continue;
		{
			char val[KS_REC_MAX_RAW + 1];

			sl = strnlen((const char *)raw + off, n);
			memcpy(val, raw + off, sl);
			val[sl] = '\0';
			kind = string_kind(a, f->name, val);
			if (!kind)
				continue;
			ks_anon_token(a, kind, val, sl, tok, sizeof(tok));
		}
		sl = strlen(tok) + 1;
		if (sl <= n || !dyn) {
			/* in place, the rest zeroed (a fixed array keeps its size: the token is cut to it) */
			if (sl > n)
				sl = n;
			memset(raw + off, 0, n);
			memcpy(raw + off, tok, sl - 1);
			continue;
		}
		/* a longer token than the string it replaces: appended, the field pointed at it */
		if (len + sl > KS_REC_MAX_RAW || sizeof(*out) + len + sl > cap) {
			memset(raw + off, 0, n);
			memcpy(raw + off, tok, n - 1);
			continue;
		}
		memset(raw + off, 0, n);
		memcpy(raw + len, tok, sl);
		{
			uint32_t at = (f->flags & TEP_FIELD_IS_RELATIVE) ? len - ((uint32_t)f->offset + 4) : len;
			uint32_t loc = (at & 0xffff) | ((uint32_t)sl << 16);

			memcpy(raw + f->offset, &loc, 4);
		}
		len += (uint32_t)sl;
	}
	out->len = (uint16_t)len;
	return (int)len;
}

int ks_anon_recording(const struct ks_anon *a, struct ks_recording *rec)
{
	size_t total = 0, at = 0;
	char *arena;

	/* one block for all: each event may grow by a token per string field */
	for (size_t i = 0; i < rec->nev; i++)
		total += ks_rec_ev_stride(rec->evs[i].e->len) + KS_REC_MAX_DLOC * 40 + 8;
	arena = calloc(1, total + 1);
	if (!arena)
		return -ENOMEM;
	for (size_t i = 0; i < rec->nev; i++) {
		struct ks_rec_event *out = (struct ks_rec_event *)(arena + at);
		int n = ks_anon_event(a, rec->evs[i].ev, rec->evs[i].e, out, total - at);

		if (n < 0)
			continue; /* cannot happen: the block was sized for it */
		rec->evs[i].e = out;
		at += ks_rec_ev_stride((uint32_t)n);
	}
	free(rec->anon_mem);
	rec->anon_mem = arena;
	return 0;
}

struct man_ctx {
	const struct ks_anon *a;
	struct ks_rec_kv *out;
	bool next_secret; /* the previous argument was an option whose value names something */
};

/* An argument of the command line: option values that name things, and paths, become tokens. */
static void anon_arg(struct man_ctx *c, const char *arg, char *tok, size_t len)
{
	bool secret = c->next_secret || strchr(arg, '/') || is_user(c->a, arg);

	c->next_secret = !strcmp(arg, "--comm") || !strcmp(arg, "-c") || !strcmp(arg, "--cgroup") ||
			 !strcmp(arg, "-o") || !strcmp(arg, "--output");
	if (secret && !(arg[0] == '-' && !strchr(arg, '/')))
		ks_anon_token(c->a, strchr(arg, '/') ? 'p' : 'a', arg, strlen(arg), tok, len);
	else
		snprintf(tok, len, "%s", arg);
}

static void man_line(void *vctx, const char *key, const char *val)
{
	struct man_ctx *c = vctx;
	char tok[64];

	if (!strcmp(key, "host") || !strcmp(key, "filter.comm") || !strcmp(key, "filter.cgroup")) {
		ks_anon_token(c->a, key[0] == 'h' ? 'h' : 'a', val, strlen(val), tok, sizeof(tok));
		ks_rec_kv_add(c->out, key, "%s", tok);
	} else if (!strcmp(key, "arg")) {
		anon_arg(c, val, tok, sizeof(tok));
		ks_rec_kv_add(c->out, key, "%s", tok);
	} else if (!strcmp(key, "cmdline")) {
		/* the words of the line as the 'arg' lines have them (cmdline is for reading, arg for rerun) */
		struct man_ctx w = { c->a, NULL, false };
		char *dup = strdup(val), *save = NULL, *word;
		size_t n = 0;
		char *text = NULL;

		for (word = dup ? strtok_r(dup, " ", &save) : NULL; word; word = strtok_r(NULL, " ", &save)) {
			char *t;

			anon_arg(&w, word, tok, sizeof(tok));
			t = realloc(text, n + strlen(tok) + 2);
			if (!t)
				break;
			text = t;
			n += (size_t)sprintf(text + n, "%s%s", n ? " " : "", tok);
		}
		ks_rec_kv_add(c->out, key, "%s", text ? text : "");
		free(text);
		free(dup);
	} else {
		ks_rec_kv_add(c->out, key, "%s", val);
	}
}

void ks_anon_manifest(const struct ks_anon *a, const char *m, size_t len, struct ks_rec_kv *out)
{
	struct man_ctx c = { a, out, false };

	ks_rec_kv_each(m, len, man_line, &c);
	ks_rec_kv_add(out, "anonymized", "%s", "yes");
}
