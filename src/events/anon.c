/* --anonymize: keyed, stable tokens for comm, paths, user names, IP addresses and kernel pointers in recorded events and manifests. */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <event-parse.h>
#include "events/anon.h"
#include "format/field.h"
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

/*
 * Whether @f may hold a kernel pointer: pointer-typed (void *skbaddr), or
 * 8 bytes unsigned named like one (location, call_site are caught by their
 * value instead), or an unsigned 8-byte value in the kernel half of the
 * address space.  The top page (-errno as unsigned) is no pointer.
 */
static bool ptr_field(const struct tep_format_field *f, uint64_t v)
{
	size_t nl = strlen(f->name);

	if (f->size != 8 || (f->flags & (TEP_FIELD_IS_ARRAY | TEP_FIELD_IS_DYNAMIC | TEP_FIELD_IS_STRING)))
		return false;
	if ((f->flags & TEP_FIELD_IS_POINTER) || strchr(f->type, '*'))
		return true;
	if (f->flags & TEP_FIELD_IS_SIGNED)
		return false;
	if ((nl >= 4 && !strcmp(f->name + nl - 4, "addr")) || (nl >= 3 && !strcmp(f->name + nl - 3, "ptr")))
		return true;
	return v >= 0xffff800000000000ull && v < 0xfffffffffffff000ull;
}

/*
 * A pointer's token: 47 bits of its keyed hash, a user-half value no kernel
 * address has, the same for the same pointer (so skbaddr still pairs
 * net_dev_queue with net_dev_xmit).  NULL stays NULL: it means "none".
 */
uint64_t ks_anon_ptr(const struct ks_anon *a, uint64_t v)
{
	uint64_t h;

	if (!v)
		return 0;
	h = ks_siphash(a->k0, a->k1 ^ (uint64_t)'k', &v, sizeof(v)) & 0x7fffffffffffull;
	return h ? h : 1;
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

		if (f->size == 8 && (uint32_t)f->offset + 8 <= len) {
			uint64_t v;

			memcpy(&v, raw + f->offset, 8);
			if (ptr_field(f, v)) {
				v = ks_anon_ptr(a, v);
				memcpy(raw + f->offset, &v, 8);
				continue;
			}
		}
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

/* What the value of a record option holds, for the manifest's copy of the command line. */
enum val_kind {
	V_NONE,	  /* not an option that takes a value ksight knows of: the plain rules */
	V_NAME,	  /* names something (a cgroup, an output file, the key itself): a token */
	V_COMM,	  /* a command name: the token events give that comm */
	V_EXPR,	  /* a --filter/--trigger expression: its "strings" become tokens, the rest is kept */
	V_SPEC,	  /* --trigger-latency: event and field names and a duration, kept as typed */
	V_FLAG,	  /* an option without a value whose name begins another's (--anonymize) */
};

static const struct {
	char s;
	const char *l;
	enum val_kind k;
} val_opts[] = {
	{ 'c', "cgroup", V_NAME }, { 'o', "output", V_NAME }, { 0, "anonymize-key", V_NAME }, { 0, "comm", V_COMM },
	{ 0, "filter", V_EXPR },   { 0, "trigger", V_EXPR },  { 0, "trigger-latency", V_SPEC },
	{ 0, "anonymize", V_FLAG },
};

/*
 * The kind of the value option word @arg takes; *@val: the value when it is
 * in the same word (--filter=EXPR, -oFILE), else NULL (the next argument).
 * Long options may be cut as getopt_long allows (--filt): an unambiguous
 * prefix among those above, the whole name first.
 */
static enum val_kind opt_kind(const char *arg, const char **val)
{
	const char *eq;
	size_t n;
	int hit = -1;

	*val = NULL;
	if (arg[0] != '-' || !arg[1])
		return V_NONE;
	if (arg[1] != '-') {
		for (size_t i = 0; i < sizeof(val_opts) / sizeof(val_opts[0]); i++)
			if (val_opts[i].s && val_opts[i].s == arg[1]) {
				*val = arg[2] ? arg + 2 : NULL;
				return val_opts[i].k;
			}
		return V_NONE;
	}
	eq = strchr(arg, '=');
	n = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
	if (!n)
		return V_NONE;
	for (size_t i = 0; i < sizeof(val_opts) / sizeof(val_opts[0]); i++) {
		if (strncmp(arg + 2, val_opts[i].l, n))
			continue;
		if (!val_opts[i].l[n]) {
			hit = (int)i;
			break;
		}
		if (hit >= 0)
			return V_NONE; /* ambiguous: record refused it */
		hit = (int)i;
	}
	if (hit < 0 || val_opts[hit].k == V_FLAG)
		return V_NONE;
	*val = eq ? eq + 1 : NULL;
	return val_opts[hit].k;
}

/*
 * @expr with each "quoted string" replaced by the token of its text (escapes
 * resolved, as the filter compiler reads them), of the kind an event's value
 * of the field before it would get: the same comm gives the same token in
 * the filter and in the events, so the filter still selects them.  Strings
 * the events keep as they are (no path, no user) become 'a' tokens: a
 * filter's string was typed about this workload.  The syntax is kept, so
 * the expression still compiles for rerun.
 */
static void anon_expr(const struct ks_anon *a, const char *expr, FILE *out)
{
	char *val = malloc(strlen(expr) + 1), tok[40], field[64] = "";
	const char *s = expr;

	while (val && *s) {
		size_t n = 0, vl = 0;
		char kind;

		if (isalpha((unsigned char)*s) || *s == '_') {
			while (isalnum((unsigned char)s[n]) || s[n] == '_')
				n++;
			snprintf(field, sizeof(field), "%.*s", (int)n, s);
			fwrite(s, 1, n, out);
			s += n;
			continue;
		}
		if (*s != '"') {
			fputc(*s++, out);
			continue;
		}
		for (n = 1; s[n] && s[n] != '"'; n++) {
			char ch = s[n];

			if (ch == '\\' && s[n + 1]) {
				ch = s[++n];
				ch = ch == 'n' ? '\n' : ch == 't' ? '\t' : ch;
			}
			val[vl++] = ch;
		}
		val[vl] = '\0';
		kind = string_kind(a, field, val);
		ks_anon_token(a, kind ? kind : 'a', val, vl, tok, kind == 'c' ? 16 : sizeof(tok));
		fprintf(out, "\"%s\"", tok);
		s += s[n] ? n + 1 : n;
	}
	if (!val)
		fputs("arg-", out); /* no memory: nothing of the expression rather than all of it */
	free(val);
}

/* The value @v of an option of kind @k, anonymized, onto @out. */
static void anon_value(const struct ks_anon *a, enum val_kind k, const char *v, FILE *out)
{
	char tok[40];

	switch (k) {
	case V_EXPR:
		anon_expr(a, v, out);
		return;
	case V_SPEC:
		fputs(v, out);
		return;
	case V_COMM:
		ks_anon_token(a, 'c', v, strlen(v), tok, 16);
		break;
	case V_NAME:
		ks_anon_token(a, strchr(v, '/') ? 'p' : 'a', v, strlen(v), tok, sizeof(tok));
		break;
	case V_NONE:
	case V_FLAG:
		if (!strchr(v, '/') && !is_user(a, v)) {
			fputs(v, out);
			return;
		}
		ks_anon_token(a, strchr(v, '/') ? 'p' : 'u', v, strlen(v), tok, sizeof(tok));
		break;
	}
	fputs(tok, out);
}

struct man_ctx {
	const struct ks_anon *a;
	struct ks_rec_kv *out;
	enum val_kind next; /* the previous argument was an option whose value is this one */
	char *line;	    /* the anonymized arguments joined as 'cmdline' has them */
	size_t line_len;
	FILE *line_f;
};

/* An argument of the command line, anonymized, onto @out (malloc'd text via open_memstream). */
static void anon_arg(struct man_ctx *c, const char *arg, FILE *out)
{
	const char *val;
	enum val_kind k;

	if (c->next != V_NONE) {
		anon_value(c->a, c->next, arg, out);
		c->next = V_NONE;
		return;
	}
	k = opt_kind(arg, &val);
	if (k == V_NONE) {
		/* a positional argument or another option: paths and user names become tokens */
		anon_value(c->a, V_NONE, arg, out);
		return;
	}
	if (!val) {
		fputs(arg, out);
		c->next = k;
		return;
	}
	fwrite(arg, 1, (size_t)(val - arg), out);
	anon_value(c->a, k, val, out);
}

/* Pass 1: the 'arg' lines anonymized, joined as record writes 'cmdline' (a word with a space quoted). */
static void join_args(void *vctx, const char *key, const char *val)
{
	struct man_ctx *c = vctx;
	char *word = NULL;
	size_t len = 0;
	FILE *w;

	if (strcmp(key, "arg") || !c->line_f)
		return;
	w = open_memstream(&word, &len);
	if (!w)
		return;
	anon_arg(c, val, w);
	fclose(w);
	if (word) {
		bool q = strpbrk(word, " \t'") != NULL;

		fprintf(c->line_f, q ? " '%s'" : " %s", word);
	}
	free(word);
}

static void man_line(void *vctx, const char *key, const char *val)
{
	struct man_ctx *c = vctx;
	char tok[64];

	if (!strcmp(key, "host") || !strcmp(key, "filter.cgroup")) {
		ks_anon_token(c->a, key[0] == 'h' ? 'h' : 'a', val, strlen(val), tok, sizeof(tok));
		ks_rec_kv_add(c->out, key, "%s", tok);
	} else if (!strcmp(key, "filter.comm")) {
		ks_anon_token(c->a, 'c', val, strlen(val), tok, 16);
		ks_rec_kv_add(c->out, key, "%s", tok);
	} else if (!strcmp(key, "filter") || !strcmp(key, "flight.trigger")) {
		char *text = NULL;
		size_t len = 0;
		FILE *w = open_memstream(&text, &len);

		if (w) {
			anon_expr(c->a, val, w);
			fclose(w);
		}
		ks_rec_kv_add(c->out, key, "%s", text ? text : "arg-");
		free(text);
	} else if (!strcmp(key, "arg")) {
		char *word = NULL;
		size_t len = 0;
		FILE *w = open_memstream(&word, &len);

		if (w) {
			anon_arg(c, val, w);
			fclose(w);
		}
		ks_rec_kv_add(c->out, key, "%s", word ? word : "arg-");
		free(word);
	} else if (!strcmp(key, "cmdline")) {
		/*
		 * Rebuilt from the anonymized 'arg' lines (pass 1), as record
		 * joined them: its own words cannot be split back into the
		 * arguments once one held a space.  The first two words
		 * ("ksight record") name nothing.
		 */
		const char *sp = strchr(val, ' ');

		sp = sp ? strchr(sp + 1, ' ') : NULL;
		ks_rec_kv_add(c->out, key, "%.*s%s", sp ? (int)(sp - val) : (int)strlen(val), val,
			      c->line ? c->line : "");
	} else {
		ks_rec_kv_add(c->out, key, "%s", val);
	}
}

void ks_anon_manifest(const struct ks_anon *a, const char *m, size_t len, struct ks_rec_kv *out)
{
	struct man_ctx c = { .a = a, .out = out };

	c.line_f = open_memstream(&c.line, &c.line_len);
	ks_rec_kv_each(m, len, join_args, &c);
	if (c.line_f)
		fclose(c.line_f);
	c.next = V_NONE;
	ks_rec_kv_each(m, len, man_line, &c);
	free(c.line);
	ks_rec_kv_add(out, "anonymized", "%s", "yes");
}
