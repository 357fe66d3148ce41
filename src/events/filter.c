/* Event filter expressions: a tokenizer and recursive-descent parser, a compiler to forward-jumping branch programs, and their user-space interpreter. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event-parse.h>
#include "core/log.h"
#include "events/filter.h"
#include "format/recording.h"

/* Nodes of one expression: comparisons and the &&, ||, ! over them. */
#define MAX_NODES (4 * KS_FLT_MAX_INSNS)
#define MAX_DEPTH 64

enum { N_CMP = 1, N_AND, N_OR, N_NOT };

/* Comparison operators as written (before they are reduced to enum ks_flt_op). */
enum { O_EQ = 1, O_NE, O_LT, O_LE, O_GT, O_GE, O_BAND, O_GLOB, O_NGLOB };

struct node {
	int kind;
	int a, b; /* children (N_AND, N_OR: both; N_NOT: a) */
	/* N_CMP */
	int fcol, flen;	 /* field name in the text */
	int idx, idxcol; /* array index (-1: none) and where it is */
	int op, opcol;
	int vcol, vlen;	 /* the value token (a string: between its quotes) */
	bool vstr;
	uint64_t num;	 /* the number, two's complement when negative */
	bool neg;
};

struct ks_flt_expr {
	char *text;
	int n, root, ncmp, nstr;
	struct node v[MAX_NODES];
};

enum tok_kind { T_END, T_NAME, T_NUM, T_STR, T_OP, T_LP, T_RP, T_LB, T_RB, T_AND, T_OR, T_NOT };

struct parser {
	struct ks_flt_expr *x;
	const char *s;
	int pos;      /* next byte */
	int tk, tcol, tlen, top; /* current token: kind, column, length, operator */
	uint64_t tnum;
	bool tneg;
	int depth;
	struct ks_flt_err *err;
};

static int fail(struct ks_flt_err *err, int col, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct ks_flt_err *err, int col, const char *fmt, ...)
{
	va_list ap;

	err->col = col;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int lex_number(struct parser *p)
{
	const char *s = p->s + p->pos, *start = s;
	bool neg = *s == '-';
	uint64_t v = 0;
	unsigned base = 10;

	if (neg)
		s++;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && isxdigit((unsigned char)s[2])) {
		base = 16;
		s += 2;
	} else if (s[0] == '0' && isdigit((unsigned char)s[1])) {
		base = 8;
		s++;
	}
	for (;; s++) {
		unsigned d;

		if (isdigit((unsigned char)*s))
			d = (unsigned)(*s - '0');
		else if (base == 16 && isxdigit((unsigned char)*s))
			d = (unsigned)(tolower((unsigned char)*s) - 'a' + 10);
		else
			break;
		if (d >= base)
			return fail(p->err, (int)(s - p->s), "bad digit '%c' in a base-%u number", *s, base);
		if (v > (UINT64_MAX - d) / base)
			return fail(p->err, p->pos, "number out of range (64 bits)");
		v = v * base + d;
	}
	if (isalnum((unsigned char)*s) || *s == '_')
		return fail(p->err, (int)(s - p->s), "unexpected '%c' in a number", *s);
	if (neg && v > (1ull << 63))
		return fail(p->err, p->pos, "number out of range (64 bits)");
	p->tk = T_NUM;
	p->tnum = neg ? (uint64_t)0 - v : v;
	p->tneg = neg && v;
	p->tlen = (int)(s - start);
	return 0;
}

/* Reads the next token into p->tk and friends. */
static int lex(struct parser *p)
{
	static const struct {
		const char *s;
		int kind, op;
	} ops[] = {
		{ "&&", T_AND, 0 }, { "||", T_OR, 0 },	  { "==", T_OP, O_EQ },	 { "!=", T_OP, O_NE },
		{ "<=", T_OP, O_LE }, { ">=", T_OP, O_GE }, { "!~", T_OP, O_NGLOB }, { "<", T_OP, O_LT },
		{ ">", T_OP, O_GT },  { "~", T_OP, O_GLOB }, { "&", T_OP, O_BAND }, { "!", T_NOT, 0 },
		{ "(", T_LP, 0 },     { ")", T_RP, 0 },	    { "[", T_LB, 0 },	     { "]", T_RB, 0 },
	};
	const char *s;

	while (isspace((unsigned char)p->s[p->pos]))
		p->pos++;
	s = p->s + p->pos;
	p->tcol = p->pos;
	p->tlen = 1;
	p->top = 0;
	if (!*s) {
		p->tk = T_END;
		p->tlen = 0;
		return 0;
	}
	if (isalpha((unsigned char)*s) || *s == '_') {
		int n = 1;

		while (isalnum((unsigned char)s[n]) || s[n] == '_')
			n++;
		p->tk = T_NAME;
		p->tlen = n;
	} else if (isdigit((unsigned char)*s) || (*s == '-' && isdigit((unsigned char)s[1]))) {
		int err = lex_number(p);

		if (err)
			return err;
	} else if (*s == '"') {
		int n = 1;

		while (s[n] && s[n] != '"')
			n += s[n] == '\\' && s[n + 1] ? 2 : 1;
		if (!s[n])
			return fail(p->err, p->pos, "string not closed: a '\"' is missing");
		p->tk = T_STR;
		p->tlen = n + 1;
	} else {
		size_t i;

		for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
			if (!strncmp(s, ops[i].s, strlen(ops[i].s)))
				break;
		if (i == sizeof(ops) / sizeof(ops[0])) {
			if (*s == '=')
				return fail(p->err, p->pos, "'=' is not an operator: compare with '=='");
			if (*s == '|')
				return fail(p->err, p->pos, "'|' is not an operator: 'or' is '||'");
			if (isprint((unsigned char)*s))
				return fail(p->err, p->pos, "unexpected character '%c'", *s);
			return fail(p->err, p->pos, "unexpected byte 0x%02x", (unsigned char)*s);
		}
		p->tk = ops[i].kind;
		p->top = ops[i].op;
		p->tlen = (int)strlen(ops[i].s);
	}
	p->pos += p->tlen;
	return 0;
}

static int new_node(struct parser *p, int kind)
{
	if (p->x->n == MAX_NODES)
		return fail(p->err, p->tcol, "filter too long (at most %d comparisons)", KS_FLT_MAX_INSNS);
	memset(&p->x->v[p->x->n], 0, sizeof(p->x->v[0]));
	p->x->v[p->x->n].kind = kind;
	p->x->v[p->x->n].idx = -1;
	return p->x->n++;
}

static const char *tok_desc(const struct parser *p)
{
	switch (p->tk) {
	case T_END:
		return "the end";
	case T_NAME:
		return "a field name";
	case T_NUM:
		return "a number";
	case T_STR:
		return "a string";
	case T_OP:
		return "an operator";
	case T_AND:
		return "'&&'";
	case T_OR:
		return "'||'";
	case T_NOT:
		return "'!'";
	case T_LP:
		return "'('";
	case T_RP:
		return "')'";
	default:
		return "a bracket";
	}
}

static int parse_or(struct parser *p);

/* field OP value */
static int parse_cmp(struct parser *p)
{
	struct node *n;
	int id, err;

	if (p->tk != T_NAME)
		return fail(p->err, p->tcol, "expected a field name, found %s", tok_desc(p));
	if (p->x->ncmp == KS_FLT_MAX_INSNS)
		return fail(p->err, p->tcol, "filter too long (at most %d comparisons)", KS_FLT_MAX_INSNS);
	id = new_node(p, N_CMP);
	if (id < 0)
		return id;
	p->x->ncmp++;
	n = &p->x->v[id];
	n->fcol = p->tcol;
	n->flen = p->tlen;
	if ((err = lex(p)))
		return err;
	if (p->tk == T_LB) {
		n->idxcol = p->tcol;
		if ((err = lex(p)))
			return err;
		if (p->tk != T_NUM || p->tneg || p->tnum > 65535)
			return fail(p->err, p->tcol, "expected an array index from 0 to 65535");
		n->idx = (int)p->tnum;
		if ((err = lex(p)))
			return err;
		if (p->tk != T_RB)
			return fail(p->err, p->tcol, "expected ']' after the index, found %s", tok_desc(p));
		if ((err = lex(p)))
			return err;
	}
	if (p->tk != T_OP)
		return fail(p->err, p->tcol, "expected a comparison (== != < <= > >= & ~ !~) after the field, found %s",
			    tok_desc(p));
	n->op = p->top;
	n->opcol = p->tcol;
	if ((err = lex(p)))
		return err;
	if (p->tk != T_NUM && p->tk != T_STR)
		return fail(p->err, p->tcol, "expected a number or a \"quoted string\", found %s", tok_desc(p));
	n->vstr = p->tk == T_STR;
	/* counted here, in the order written (the compiler emits right to left) */
	if (n->vstr && ++p->x->nstr > KS_FLT_MAX_PATS)
		return fail(p->err, p->tcol, "at most %d string comparisons", KS_FLT_MAX_PATS);
	n->vcol = p->tcol + n->vstr;
	n->vlen = p->tlen - 2 * n->vstr;
	n->num = p->tnum;
	n->neg = p->tneg;
	if ((err = lex(p)))
		return err;
	return id;
}

static int parse_unary(struct parser *p)
{
	int id, a, err;

	if (++p->depth > MAX_DEPTH)
		return fail(p->err, p->tcol, "filter nested too deeply (at most %d levels)", MAX_DEPTH);
	if (p->tk == T_NOT) {
		if ((err = lex(p)))
			return err;
		a = parse_unary(p);
		if (a < 0)
			return a;
		id = new_node(p, N_NOT);
		if (id >= 0)
			p->x->v[id].a = a;
	} else if (p->tk == T_LP) {
		int col = p->tcol;

		if ((err = lex(p)))
			return err;
		id = parse_or(p);
		if (id < 0)
			return id;
		if (p->tk != T_RP)
			return fail(p->err, p->tk == T_END ? col : p->tcol, p->tk == T_END ? "'(' not closed"
										      : "expected ')', found %s",
				    tok_desc(p));
		if ((err = lex(p)))
			return err;
	} else {
		id = parse_cmp(p);
	}
	p->depth--;
	return id;
}

static int parse_binary(struct parser *p, int tok, int kind, int (*sub)(struct parser *))
{
	int a = sub(p), b, id, err;

	while (a >= 0 && p->tk == tok) {
		if ((err = lex(p)))
			return err;
		b = sub(p);
		if (b < 0)
			return b;
		id = new_node(p, kind);
		if (id < 0)
			return id;
		p->x->v[id].a = a;
		p->x->v[id].b = b;
		a = id;
	}
	return a;
}

static int parse_and(struct parser *p)
{
	return parse_binary(p, T_AND, N_AND, parse_unary);
}

static int parse_or(struct parser *p)
{
	return parse_binary(p, T_OR, N_OR, parse_and);
}

struct ks_flt_expr *ks_flt_parse(const char *text, struct ks_flt_err *err)
{
	struct ks_flt_expr *x = calloc(1, sizeof(*x));
	struct parser p = { .x = x, .s = text, .err = err };
	int root;

	if (!x || !(x->text = strdup(text))) {
		free(x);
		fail(err, -1, "out of memory");
		return NULL;
	}
	p.s = x->text;
	root = lex(&p);
	if (!root && p.tk == T_END)
		root = fail(err, 0, "empty filter: expected a comparison such as 'pid == 42'");
	if (!root)
		root = parse_or(&p);
	if (root >= 0 && p.tk != T_END)
		root = fail(err, p.tcol, p.tk == T_RP ? "')' without its '('" : "expected '&&', '||' or the end, found %s",
			    tok_desc(&p));
	if (root < 0) {
		ks_flt_expr_free(x);
		return NULL;
	}
	x->root = root;
	return x;
}

void ks_flt_expr_free(struct ks_flt_expr *x)
{
	if (!x)
		return;
	free(x->text);
	free(x);
}

const char *ks_flt_text(const struct ks_flt_expr *x)
{
	return x->text;
}

/* Compilation against one event. */
struct cc {
	const struct ks_flt_expr *x;
	struct tep_event *ev;
	struct ks_flt_prog *prog;
	struct ks_flt_err *err;
	int npat;
	char evname[128];
};

/* The string constant of @n into @pat: escapes resolved; wildcards marked for a glob. */
static int make_pat(struct cc *c, const struct node *n, bool glob, struct ks_flt_pat *pat)
{
	const char *s = c->x->text + n->vcol;
	uint32_t len = 0;

	memset(pat, 0, sizeof(*pat));
	for (int i = 0; i < n->vlen; i++) {
		char ch = s[i];
		bool esc = ch == '\\' && i + 1 < n->vlen;

		if (len == KS_FLT_PAT_MAX)
			return fail(c->err, n->vcol, "string longer than %d bytes", KS_FLT_PAT_MAX);
		if (esc) {
			ch = s[++i];
			ch = ch == 'n' ? '\n' : ch == 't' ? '\t' : ch;
		} else if (glob && ch == '*') {
			pat->star |= 1ull << len;
		} else if (glob && ch == '?') {
			pat->any |= 1ull << len;
		}
		pat->c[len++] = ch;
	}
	pat->len = len;
	return 0;
}

/* Signedness and byte size as the event's field gives them: does @n's number fit? */
static int check_range(struct cc *c, const struct node *n, const char *fname, uint32_t size, bool sign)
{
	uint64_t v = n->num;
	int bits = (int)size * 8;

	if (bits == 64) {
		if (!sign && n->neg)
			return fail(c->err, n->vcol, "'%s' of %s is unsigned: a negative number never matches", fname,
				    c->evname);
		return 0;
	}
	if (sign) {
		int64_t s = (int64_t)v, lo = -(1ll << (bits - 1)), hi = (1ll << (bits - 1)) - 1;

		if ((n->neg && s < lo) || (!n->neg && v > (uint64_t)hi))
			return fail(c->err, n->vcol, "%s out of range for '%s' of %s (signed, %u bytes)",
				    n->neg ? "negative number" : "number", fname, c->evname, size);
	} else if (n->neg || v >> bits) {
		return fail(c->err, n->vcol, "number out of range for '%s' of %s (unsigned, %u bytes)", fname,
			    c->evname, size);
	}
	return 0;
}

/* One comparison: its instruction (at the next free slot, counted from the end) with targets @t, @f. */
static int leaf(struct cc *c, const struct node *n, int t, int f)
{
	struct ks_flt_prog *prog = c->prog;
	struct ks_flt_insn *in;
	struct tep_format_field *fld;
	char fname[64];
	bool str, swap = false;
	int id = (int)prog->n;

	snprintf(fname, sizeof(fname), "%.*s", n->flen, c->x->text + n->fcol);
	in = &prog->insn[id];
	memset(in, 0, sizeof(*in));
	fld = tep_find_any_field(c->ev, fname);
	if (fld) {
		str = fld->flags & TEP_FIELD_IS_STRING;
		if (str && n->idx >= 0)
			return fail(c->err, n->idxcol, "'%s' of %s is a string: no index", fname, c->evname);
		if (str) {
			in->src = fld->flags & TEP_FIELD_IS_DYNAMIC ? KS_FLT_DSTR : KS_FLT_STR;
			in->flags = fld->flags & TEP_FIELD_IS_RELATIVE ? KS_FLT_REL : 0;
			in->off = (uint16_t)fld->offset;
			in->size = (uint32_t)fld->size;
		} else if (fld->flags & TEP_FIELD_IS_DYNAMIC) {
			return fail(c->err, n->fcol, "'%s' of %s is a variable-length array: not comparable", fname,
				    c->evname);
		} else {
			uint32_t size = (uint32_t)fld->size, off = (uint32_t)fld->offset;

			if (fld->flags & TEP_FIELD_IS_ARRAY) {
				if (n->idx < 0)
					return fail(c->err, n->fcol, "'%s' of %s is an array: compare one element, e.g. %s[0]",
						    fname, c->evname, fname);
				if (!fld->arraylen || (unsigned)n->idx >= fld->arraylen)
					return fail(c->err, n->idxcol, "index %d out of '%s' of %s (%u elements)", n->idx,
						    fname, c->evname, fld->arraylen);
				size = fld->elementsize;
				off += (uint32_t)n->idx * size;
			} else if (n->idx >= 0) {
				return fail(c->err, n->idxcol, "'%s' of %s is not an array", fname, c->evname);
			}
			if (size != 1 && size != 2 && size != 4 && size != 8)
				return fail(c->err, n->fcol, "'%s' of %s is %u bytes: not an integer", fname, c->evname,
					    size);
			in->src = KS_FLT_INT;
			in->off = (uint16_t)off;
			in->size = size;
			in->flags = fld->flags & TEP_FIELD_IS_SIGNED ? KS_FLT_SIGNED : 0;
		}
	} else if (!strcmp(fname, "comm") || !strcmp(fname, "cpu")) {
		str = fname[1] == 'o';
		if (n->idx >= 0)
			return fail(c->err, n->idxcol, "'%s' is not an array", fname);
		in->src = str ? KS_FLT_COMM : KS_FLT_CPU;
		in->size = str ? 16 : 4;
	} else {
		return fail(c->err, n->fcol, "unknown field '%s' in %s; 'ksight list -v %s' shows its fields", fname,
			    c->evname, c->evname);
	}

	if (str != n->vstr)
		return fail(c->err, n->vcol - n->vstr, "type mismatch: '%s' of %s is %s, compared with %s", fname, c->evname,
			    str ? "a string" : "an integer", n->vstr ? "a string" : "a number");
	if (str) {
		if (n->op != O_EQ && n->op != O_NE && n->op != O_GLOB && n->op != O_NGLOB)
			return fail(c->err, n->opcol, "strings compare with == != ~ !~ only");
		if (c->npat == KS_FLT_MAX_PATS)
			return fail(c->err, n->vcol - 1, "at most %d string comparisons", KS_FLT_MAX_PATS);
		in->val = (uint64_t)c->npat;
		if (make_pat(c, n, n->op == O_GLOB || n->op == O_NGLOB, &c->prog->pat[c->npat++]))
			return -EINVAL;
		in->op = KS_FLT_MATCH;
		swap = n->op == O_NE || n->op == O_NGLOB;
	} else {
		uint32_t size = in->src == KS_FLT_CPU ? 4 : in->size;

		if (n->op == O_GLOB || n->op == O_NGLOB)
			return fail(c->err, n->opcol, "'~' is for strings; '%s' of %s is an integer", fname, c->evname);
		if (check_range(c, n, fname, size, in->flags & KS_FLT_SIGNED))
			return -EINVAL;
		in->val = n->num;
		switch (n->op) {
		case O_EQ:
		case O_NE:
			in->op = KS_FLT_EQ;
			swap = n->op == O_NE;
			break;
		case O_LT:
		case O_GE:
			in->op = KS_FLT_LT;
			swap = n->op == O_GE;
			break;
		case O_LE:
		case O_GT:
			in->op = KS_FLT_LE;
			swap = n->op == O_GT;
			break;
		default:
			in->op = KS_FLT_BAND;
		}
	}
	in->t = (uint8_t)(swap ? f : t);
	in->f = (uint8_t)(swap ? t : f);
	prog->n++;
	return id;
}

/*
 * Emits @n so that it goes to @t when it holds, @f when not, and returns
 * its entry.  Children are emitted before their parents and right before
 * left, so every target was emitted earlier: numbered from the end, every
 * jump goes forward.
 */
static int emit(struct cc *c, int ni, int t, int f)
{
	const struct node *n = &c->x->v[ni];
	int b;

	switch (n->kind) {
	case N_AND:
		b = emit(c, n->b, t, f);
		return b < 0 ? b : emit(c, n->a, b, f);
	case N_OR:
		b = emit(c, n->b, t, f);
		return b < 0 ? b : emit(c, n->a, t, b);
	case N_NOT:
		return emit(c, n->a, f, t);
	default:
		return leaf(c, n, t, f);
	}
}

int ks_flt_compile(const struct ks_flt_expr *x, struct tep_event *ev, struct ks_flt_prog *prog, struct ks_flt_err *err)
{
	struct cc c = { .x = x, .ev = ev, .prog = prog, .err = err };
	uint32_t n;
	int entry;

	memset(prog, 0, sizeof(*prog));
	ks_rec_ev_name(ev, c.evname, sizeof(c.evname));
	entry = emit(&c, x->root, KS_FLT_ACCEPT, KS_FLT_REJECT);
	if (entry < 0) {
		memset(prog, 0, sizeof(*prog));
		return entry;
	}
	/* renumber from the front: emitted k-th becomes n-1-k, so the entry (emitted last) is 0 */
	n = prog->n;
	for (uint32_t i = 0; i < n / 2; i++) {
		struct ks_flt_insn t = prog->insn[i];

		prog->insn[i] = prog->insn[n - 1 - i];
		prog->insn[n - 1 - i] = t;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct ks_flt_insn *in = &prog->insn[i];

		if (in->t < KS_FLT_ACCEPT)
			in->t = (uint8_t)(n - 1 - in->t);
		if (in->f < KS_FLT_ACCEPT)
			in->f = (uint8_t)(n - 1 - in->f);
	}
	return 0;
}

int ks_flt_compile_format(const struct ks_flt_expr *x, const char *sys, const char *format, struct ks_flt_prog *prog,
			  struct ks_flt_err *err)
{
	struct tep_handle *tep = tep_alloc();
	struct tep_event *ev = NULL;
	int rc;

	if (!tep)
		return fail(err, -1, "out of memory");
	if (!tep_parse_format(tep, &ev, format, strlen(format), sys) && ev)
		rc = ks_flt_compile(x, ev, prog, err);
	else
		rc = fail(err, -1, "cannot parse the format of %s", sys);
	tep_free(tep);
	return rc;
}

/* Integer @in of the raw record (0 beyond @len), extended to 64 bits by its signedness. */
static uint64_t load_int(const struct ks_flt_insn *in, const unsigned char *raw, uint32_t len)
{
	uint64_t v = 0;

	if ((uint32_t)in->off + in->size > len || in->size > 8)
		return 0;
	memcpy(&v, raw + in->off, in->size); /* little endian: the low bytes */
	if ((in->flags & KS_FLT_SIGNED) && in->size < 8 && (v >> (in->size * 8 - 1)) & 1)
		v |= ~0ull << (in->size * 8);
	return v;
}

static bool match(const struct ks_flt_pat *pat, const char *s, uint32_t n)
{
	struct ks_flt_glob g = { .n = n };

	for (uint32_t i = 0; i < KS_FLT_GLOB_STEPS; i++)
		if (ks_flt_glob_step(&g, s, pat))
			return g.result;
	return false;
}

static bool test(const struct ks_flt_prog *prog, const struct ks_flt_insn *in, const struct ks_rec_event *e)
{
	const unsigned char *raw = (const unsigned char *)(e + 1);
	char buf[KS_FLT_STR_MAX];
	uint32_t n = 0, loc, off;
	uint64_t v;

	switch (in->src) {
	case KS_FLT_INT:
	case KS_FLT_CPU:
		v = in->src == KS_FLT_CPU ? e->cpu : load_int(in, raw, e->len);
		switch (in->op) {
		case KS_FLT_EQ:
			return v == in->val;
		case KS_FLT_LT:
			return in->flags & KS_FLT_SIGNED ? (int64_t)v < (int64_t)in->val : v < in->val;
		case KS_FLT_LE:
			return in->flags & KS_FLT_SIGNED ? (int64_t)v <= (int64_t)in->val : v <= in->val;
		case KS_FLT_BAND:
			return (v & in->val) != 0;
		}
		return false;
	case KS_FLT_STR:
		if ((uint32_t)in->off + in->size <= e->len) {
			n = in->size < KS_FLT_STR_MAX ? in->size : KS_FLT_STR_MAX;
			memcpy(buf, raw + in->off, n);
		}
		break;
	case KS_FLT_DSTR:
		if ((uint32_t)in->off + 4 > e->len)
			break;
		memcpy(&loc, raw + in->off, 4);
		off = (loc & 0xffff) + (in->flags & KS_FLT_REL ? in->off + 4u : 0);
		n = loc >> 16;
		if (n > KS_FLT_STR_MAX)
			n = KS_FLT_STR_MAX;
		if (off + n > e->len)
			n = 0;
		memcpy(buf, raw + off, n);
		break;
	case KS_FLT_COMM:
		n = sizeof(e->comm);
		memcpy(buf, e->comm, n);
		break;
	default:
		return false;
	}
	if (in->op != KS_FLT_MATCH || in->val >= KS_FLT_MAX_PATS)
		return false;
	return match(&prog->pat[in->val], buf, n);
}

bool ks_flt_run(const struct ks_flt_prog *prog, const struct ks_rec_event *e)
{
	uint32_t pc = 0;

	if (!prog->n)
		return true;
	for (int step = 0; step < KS_FLT_MAX_INSNS && pc < prog->n && pc < KS_FLT_MAX_INSNS; step++) {
		const struct ks_flt_insn *in = &prog->insn[pc];
		uint8_t next = test(prog, in, e) ? in->t : in->f;

		if (next == KS_FLT_ACCEPT)
			return true;
		if (next <= pc) /* backward or KS_FLT_REJECT: a compiled program only jumps forward */
			return false;
		pc = next;
	}
	return false;
}

void ks_flt_report(const char *opt, const char *text, const struct ks_flt_err *err)
{
	int len = (int)strlen(text);

	if (err->col < 0 || err->col > len) {
		p_err("invalid %s: %s", opt, err->msg);
		return;
	}
	p_err("invalid %s at column %d: %s", opt, err->col + 1, err->msg);
	/* the text as typed (control bytes as spaces, so the caret lines up), the caret under the spot */
	fputs("  ", stderr);
	for (int i = 0; i < len; i++)
		fputc(isprint((unsigned char)text[i]) ? text[i] : ' ', stderr);
	fprintf(stderr, "\n  %*s^\n", err->col, "");
}

int ks_recording_filter(struct ks_recording *rec, const char *text)
{
	struct {
		struct tep_event *ev;
		struct ks_flt_prog *prog;
	} *cache = NULL;
	struct ks_flt_err err;
	struct ks_flt_expr *x = ks_flt_parse(text, &err);
	size_t keep = 0;
	int ncache = 0, rc = 0;

	if (!x) {
		ks_flt_report("--filter", text, &err);
		return err.col < 0 ? -ENOMEM : -EINVAL;
	}
	for (size_t i = 0; i < rec->nev; i++) {
		struct ks_rec_ev *ev = &rec->evs[i];
		int k;

		for (k = 0; k < ncache && cache[k].ev != ev->ev; k++)
			;
		if (k == ncache) {
			void *n = realloc(cache, (size_t)(ncache + 1) * sizeof(*cache));

			if (!n) {
				rc = -ENOMEM;
				break;
			}
			cache = n;
			cache[k].ev = ev->ev;
			cache[k].prog = malloc(sizeof(struct ks_flt_prog));
			ncache++;
			if (!cache[k].prog) {
				rc = -ENOMEM;
				break;
			}
			rc = ks_flt_compile(x, ev->ev, cache[k].prog, &err);
			if (rc) {
				ks_flt_report("--filter", text, &err);
				break;
			}
		}
		if (ks_flt_run(cache[k].prog, ev->e))
			rec->evs[keep++] = *ev;
	}
	/* first_ts and last_ts stay: the span (and rates over it) is the recording's */
	if (!rc)
		rec->nev = keep;
	for (int k = 0; k < ncache; k++)
		free(cache[k].prog);
	free(cache);
	ks_flt_expr_free(x);
	return rc;
}
