/* `ksight serve`: the Prometheus exporter daemon (collectors in cumulative mode behind libmicrohttpd). */
#ifndef KS_SERVE_SERVE_H
#define KS_SERVE_SERVE_H

#include <stdbool.h>

/* The web configuration file (exporter-toolkit format): TLS key pair and basic-auth users. */
#define KS_WEB_USERS 32
struct ks_web_config {
	char *cert_pem, *key_pem; /* NULL: plain HTTP */
	int nusers;
	struct {
		char name[64];
		char hash[128]; /* crypt(3) hash, bcrypt ("$2y$...") */
	} users[KS_WEB_USERS];
};

/* Reads @path into @wc (zeroed first); 0 or negative errno after a one-line error naming the problem. */
int ks_web_config_load(struct ks_web_config *wc, const char *path);
void ks_web_config_free(struct ks_web_config *wc);
/* True when @user/@pass match a configured user (bcrypt via crypt_r); true when no users are configured. */
bool ks_web_auth_ok(const struct ks_web_config *wc, const char *user, const char *pass);

int ks_serve_main(int argc, char **argv);

#endif
