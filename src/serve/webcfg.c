/* The exporter-toolkit web configuration (tls_server_config, basic_auth_users) read with libyaml; passwords checked with crypt_r. */
#include <crypt.h>
#include <errno.h>
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

static int load_tls(struct ks_web_config *wc, const char *path, yaml_document_t *doc, yaml_node_t *m)
{
	const char *cert = NULL, *key = NULL;
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
		else if (k && (!strcmp(k, "min_version") || !strcmp(k, "max_version") || !strcmp(k, "cipher_suites") ||
			       !strcmp(k, "prefer_server_cipher_suites") || !strcmp(k, "curve_preferences")))
			p_warn("web config '%s': tls_server_config.%s is not supported and is ignored", KS_ESC(path), k);
		else {
			p_err("web config '%s': unknown or unsupported tls_server_config field '%s'", KS_ESC(path),
			      KS_ESC(k ? k : "?"));
			return -EINVAL;
		}
	}
	if (!cert || !key || !cert[0] || !key[0]) {
		p_err("web config '%s': tls_server_config needs cert_file and key_file", KS_ESC(path));
		return -EINVAL;
	}
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
			p_warn("web config '%s': http_server_config is not supported and is ignored", KS_ESC(path));
		else {
			p_err("web config '%s': unknown field '%s'", KS_ESC(path), KS_ESC(k ? k : "?"));
			err = -EINVAL;
		}
	}
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	fclose(f);
	if (err)
		ks_web_config_free(wc);
	return err;
}

bool ks_web_auth_ok(const struct ks_web_config *wc, const char *user, const char *pass)
{
	struct crypt_data *cd;
	bool ok = false;

	if (!wc->nusers)
		return true;
	for (int i = 0; i < wc->nusers; i++) {
		const char *h;
		size_t n;
		unsigned char diff = 0;

		if (strcmp(wc->users[i].name, user))
			continue;
		cd = calloc(1, sizeof(*cd));
		if (!cd)
			return false;
		h = crypt_r(pass, wc->users[i].hash, cd);
		n = strlen(wc->users[i].hash);
		/* compare all of it: the time says nothing about where a wrong password differs */
		if (h && strlen(h) == n) {
			for (size_t j = 0; j < n; j++)
				diff |= (unsigned char)(h[j] ^ wc->users[i].hash[j]);
			ok = !diff;
		}
		free(cd);
		break;
	}
	return ok;
}
