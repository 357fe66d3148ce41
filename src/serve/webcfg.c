/* The exporter-toolkit web configuration (tls_server_config, basic_auth_users) read with libyaml; passwords checked with crypt_r. */
#include <crypt.h>
#include <errno.h>
#include <gnutls/crypto.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>
#include "core/log.h"
#include "core/parse.h"
#include "serve/serve.h"

void ks_web_config_free(struct ks_web_config *wc)
{
	free(wc->cert_pem);
	free(wc->key_pem);
	memset(wc, 0, sizeof(*wc));
}

/* A whole file (a PEM), relative paths taken from the config file's directory as the toolkit does. */
static int read_pem(const char *cfg, const char *path, char **out)
{
	char full[4096], dir[4096];
	FILE *f;
	long n;

	snprintf(dir, sizeof(dir), "%s", cfg);
	if (path[0] == '/')
		snprintf(full, sizeof(full), "%s", path);
	else
		snprintf(full, sizeof(full), "%s/%s", dirname(dir), path);
	f = fopen(full, "re");
	if (!f) {
		int err = errno;

		p_err("web config '%s': cannot read '%s': %s", KS_ESC(cfg), KS_ESC(full), strerror(err));
		return -err;
	}
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || n > (1 << 20) || fseek(f, 0, SEEK_SET) ||
	    !(*out = calloc(1, (size_t)n + 1)) || fread(*out, 1, (size_t)n, f) != (size_t)n) {
		fclose(f);
		p_err("web config '%s': cannot read '%s'", KS_ESC(cfg), KS_ESC(full));
		return -EIO;
	}
	fclose(f);
	return 0;
}

static const char *scalar(yaml_document_t *doc, yaml_node_t *n)
{
	(void)doc;
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* "TLS12" into GnuTLS's "VERS-TLS1.2"; NULL when not a version the toolkit names. */
static const char *tls_version(const char *v)
{
	static const char *const names[][2] = {
		{ "TLS10", "VERS-TLS1.0" }, { "TLS11", "VERS-TLS1.1" }, { "TLS12", "VERS-TLS1.2" }, { "TLS13", "VERS-TLS1.3" },
	};

	for (size_t i = 0; v && i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(v, names[i][0]))
			return names[i][1];
	return NULL;
}

/*
 * min_version and max_version (the toolkit's default minimum is TLS12) as
 * a priority string enabling the versions between them.
 */
static int tls_priorities(struct ks_web_config *wc, const char *path, const char *min, const char *max)
{
	static const char *const all[] = { "TLS10", "TLS11", "TLS12", "TLS13" };
	int lo = -1, hi = -1;
	size_t n;

	for (int i = 0; i < 4; i++) {
		if (!strcmp(all[i], min ? min : "TLS12"))
			lo = i;
		if (!strcmp(all[i], max ? max : "TLS13"))
			hi = i;
	}
	if (lo < 0 || hi < 0 || lo > hi) {
		p_err("web config '%s': tls_server_config: min_version %s, max_version %s: expected TLS10 to TLS13, min "
		      "not above max", KS_ESC(path), KS_ESC(min ? min : "TLS12"), KS_ESC(max ? max : "TLS13"));
		return -EINVAL;
	}
	n = (size_t)snprintf(wc->priorities, sizeof(wc->priorities), "NORMAL:-VERS-ALL");
	for (int i = lo; i <= hi; i++)
		n += (size_t)snprintf(wc->priorities + n, sizeof(wc->priorities) - n, ":+%s", tls_version(all[i]));
	return 0;
}

static int load_tls(struct ks_web_config *wc, const char *path, yaml_document_t *doc, yaml_node_t *m)
{
	const char *cert = NULL, *key = NULL, *min = NULL, *max = NULL;
	int err;

	if (m->type != YAML_MAPPING_NODE) {
		p_err("web config '%s': tls_server_config must be a mapping", KS_ESC(path));
		return -EINVAL;
	}
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
		const char *k = scalar(doc, yaml_document_get_node(doc, p->key));
		const char *v = scalar(doc, yaml_document_get_node(doc, p->value));

		if (k && !strcmp(k, "cert_file"))
			cert = v;
		else if (k && !strcmp(k, "key_file"))
			key = v;
		else if (k && !strcmp(k, "min_version"))
			min = v ? v : "";
		else if (k && !strcmp(k, "max_version"))
			max = v ? v : "";
		else if (k && !strcmp(k, "client_auth_type") && v && !strcmp(v, "NoClientCert"))
			; /* the default: no client certificate asked for */
		else if (k && (!strcmp(k, "client_auth_type") || !strcmp(k, "client_ca_file") ||
			       !strcmp(k, "client_allowed_sans"))) {
			/* refused, not ignored: a scraper without a certificate would be let in */
			p_err("web config '%s': tls_server_config.%s: client certificates (mutual TLS) are not supported; "
			      "use basic_auth_users", KS_ESC(path), k);
			return -EINVAL;
		} else if (k && (!strcmp(k, "cipher_suites") || !strcmp(k, "prefer_server_cipher_suites") ||
				 !strcmp(k, "curve_preferences"))) {
			p_err("web config '%s': tls_server_config.%s is not supported (GnuTLS's defaults apply); remove it",
			      KS_ESC(path), k);
			return -EINVAL;
		} else {
			p_err("web config '%s': unknown or unsupported tls_server_config field '%s'", KS_ESC(path),
			      KS_ESC(k ? k : "?"));
			return -EINVAL;
		}
	}
	if (!cert || !key || !cert[0] || !key[0]) {
		p_err("web config '%s': tls_server_config needs cert_file and key_file", KS_ESC(path));
		return -EINVAL;
	}
	err = tls_priorities(wc, path, min, max);
	if (!err)
		err = read_pem(path, cert, &wc->cert_pem);
	return err ? err : read_pem(path, key, &wc->key_pem);
}

static int load_users(struct ks_web_config *wc, const char *path, yaml_document_t *doc, yaml_node_t *m)
{
	if (m->type != YAML_MAPPING_NODE) {
		p_err("web config '%s': basic_auth_users must be a mapping of user: bcrypt hash", KS_ESC(path));
		return -EINVAL;
	}
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
		const char *k = scalar(doc, yaml_document_get_node(doc, p->key));
		const char *v = scalar(doc, yaml_document_get_node(doc, p->value));

		if (!k || !v || strncmp(v, "$2", 2) || strlen(v) >= sizeof(wc->users[0].hash) ||
		    strlen(k) >= sizeof(wc->users[0].name)) {
			p_err("web config '%s': user '%s': expected a bcrypt hash ($2y$...)", KS_ESC(path),
			      KS_ESC(k ? k : "?"));
			return -EINVAL;
		}
		if (wc->nusers == KS_WEB_USERS) {
			p_err("web config '%s': more than %d users", KS_ESC(path), KS_WEB_USERS);
			return -EINVAL;
		}
		snprintf(wc->users[wc->nusers].name, sizeof(wc->users[0].name), "%s", k);
		snprintf(wc->users[wc->nusers].hash, sizeof(wc->users[0].hash), "%s", v);
		wc->nusers++;
	}
	return 0;
}

/* http_server_config: only "http2: false", which holds (HTTP/1.1 is all ksight serves). */
static int load_http(const char *path, yaml_document_t *doc, yaml_node_t *m)
{
	if (m->type != YAML_MAPPING_NODE) {
		p_err("web config '%s': http_server_config must be a mapping", KS_ESC(path));
		return -EINVAL;
	}
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
		const char *k = scalar(doc, yaml_document_get_node(doc, p->key));
		const char *v = scalar(doc, yaml_document_get_node(doc, p->value));

		if (k && !strcmp(k, "http2") && v && !strcmp(v, "false"))
			continue;
		p_err("web config '%s': http_server_config.%s is not supported (HTTP/1.1 only, no extra headers)",
		      KS_ESC(path), KS_ESC(k ? k : "?"));
		return -EINVAL;
	}
	return 0;
}

/*
 * wc->dummy: a hash, at the cost most users' hashes have, of a random
 * password no one is told, so checking an unknown user's password costs
 * what checking a known one's does.
 */
static int make_dummy(struct ks_web_config *wc, const char *path)
{
	char salt[CRYPT_GENSALT_OUTPUT_SIZE], prefix[8], pass[33];
	unsigned char rnd[16];
	struct crypt_data *cd;
	unsigned long cost = 10;
	int best = 0;
	const char *h;

	for (int i = 0; i < wc->nusers; i++) {
		unsigned long c = strtoul(wc->users[i].hash + 4, NULL, 10);
		int same = 0;

		for (int j = 0; j < wc->nusers; j++)
			same += strtoul(wc->users[j].hash + 4, NULL, 10) == c;
		if (same > best) {
			best = same;
			cost = c;
			snprintf(prefix, sizeof(prefix), "%.4s", wc->users[i].hash);
		}
	}
	if (!best)
		return 0;
	if (gnutls_rnd(GNUTLS_RND_NONCE, rnd, sizeof(rnd)))
		return -EIO;
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(pass + 2 * i, 3, "%02x", rnd[i]);
	cd = calloc(1, sizeof(*cd));
	if (!cd)
		return -ENOMEM;
	h = crypt_gensalt_rn(prefix, cost, NULL, 0, salt, sizeof(salt)) ? crypt_r(pass, salt, cd) : NULL;
	if (!h || h[0] == '*' || strlen(h) >= sizeof(wc->dummy)) {
		free(cd);
		p_err("web config '%s': cannot make a %s hash of cost %lu", KS_ESC(path), prefix, cost);
		return -EINVAL;
	}
	snprintf(wc->dummy, sizeof(wc->dummy), "%s", h);
	free(cd);
	return 0;
}

int ks_web_config_load(struct ks_web_config *wc, const char *path)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_node_t *root;
	FILE *f;
	int err = 0;

	memset(wc, 0, sizeof(*wc));
	f = fopen(path, "re");
	if (!f) {
		err = errno;
		p_err("web config '%s': %s", KS_ESC(path), strerror(err));
		return -err;
	}
	yaml_parser_initialize(&parser);
	yaml_parser_set_input_file(&parser, f);
	if (!yaml_parser_load(&parser, &doc)) {
		p_err("web config '%s': line %zu: %s", KS_ESC(path), parser.problem_mark.line + 1,
		      parser.problem ? parser.problem : "not YAML");
		yaml_parser_delete(&parser);
		fclose(f);
		return -EINVAL;
	}
	root = yaml_document_get_root_node(&doc);
	if (root && root->type != YAML_MAPPING_NODE) {
		p_err("web config '%s': expected a mapping at the top", KS_ESC(path));
		err = -EINVAL;
	}
	for (yaml_node_pair_t *p = root ? root->data.mapping.pairs.start : NULL; root && !err && p < root->data.mapping.pairs.top;
	     p++) {
		const char *k = scalar(&doc, yaml_document_get_node(&doc, p->key));
		yaml_node_t *v = yaml_document_get_node(&doc, p->value);

		if (k && !strcmp(k, "tls_server_config"))
			err = load_tls(wc, path, &doc, v);
		else if (k && !strcmp(k, "basic_auth_users"))
			err = load_users(wc, path, &doc, v);
		else if (k && !strcmp(k, "http_server_config"))
			err = load_http(path, &doc, v);
		else {
			p_err("web config '%s': unknown field '%s'", KS_ESC(path), KS_ESC(k ? k : "?"));
			err = -EINVAL;
		}
	}
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	fclose(f);
	if (!err)
		err = make_dummy(wc, path);
	if (err)
		ks_web_config_free(wc);
	return err;
}

/* SHA-256 of user, hash and password, each ended by a NUL (no two triples run together alike). */
static int cache_key(const char *user, const char *hash, const char *pass, unsigned char key[32])
{
	gnutls_hash_hd_t h;

	if (gnutls_hash_init(&h, GNUTLS_DIG_SHA256))
		return -EIO;
	gnutls_hash(h, user, strlen(user) + 1);
	gnutls_hash(h, hash, strlen(hash) + 1);
	gnutls_hash(h, pass, strlen(pass) + 1);
	gnutls_hash_deinit(h, key);
	return 0;
}

/* The whole of @a against the whole of @b: the time says nothing about where they differ. */
static bool same_bytes(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;
	unsigned char diff = 0;

	for (size_t i = 0; i < n; i++)
		diff |= (unsigned char)(x[i] ^ y[i]);
	return !diff;
}

bool ks_web_auth_ok(const struct ks_web_config *wc, struct ks_auth_cache *cache, const char *user, const char *pass)
{
	struct crypt_data *cd;
	const char *hash = wc->dummy, *h;
	unsigned char key[32];
	bool known = false, ok = false, keyed;
	size_t n;

	if (!wc->nusers)
		return true;
	for (int i = 0; i < wc->nusers; i++)
		if (!strcmp(wc->users[i].name, user)) {
			hash = wc->users[i].hash;
			known = true;
			break;
		}
	keyed = cache && !cache_key(user, hash, pass, key);
	if (keyed)
		for (int i = 0; i < cache->n; i++)
			if (same_bytes(cache->key[i], key, sizeof(key))) {
				cache->hits++;
				return known;
			}
	if (cache)
		cache->misses++;
	cd = calloc(1, sizeof(*cd));
	if (!cd)
		return false;
	/* an unknown user's password is checked all the same, against the dummy */
	h = crypt_r(pass, hash, cd);
	n = strlen(hash);
	if (h && strlen(h) == n)
		ok = same_bytes(h, hash, n) && known;
	free(cd);
	if (ok && keyed) {
		memcpy(cache->key[cache->next], key, sizeof(key));
		cache->next = (cache->next + 1) % KS_AUTH_CACHE;
		if (cache->n < KS_AUTH_CACHE)
			cache->n++;
	}
	return ok;
}
