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
	/* checked in place of an unknown user's: a hash of a random password at the users' most common cost */
	char dummy[128];
	/* tls_server_config's min_version and max_version as a GnuTLS priority string */
	char priorities[128];
};

/*
 * Verified passwords, as the exporter toolkit keeps them: a scrape every
 * second would otherwise pay a bcrypt (0.2 s at cost 10) each time.  Only
 * successes are kept (a client without the password cannot push entries
 * out), by the SHA-256 of user, hash and password (no password is held),
 * the oldest replaced when full.  The hash in the key makes a SIGHUP that
 * changes it miss.
 */
#define KS_AUTH_CACHE 64
struct ks_auth_cache {
	unsigned char key[KS_AUTH_CACHE][32];
	int n, next;
	unsigned long long hits, misses;
};

/* Reads @path into @wc (zeroed first); 0 or negative errno after a one-line error naming the problem. */
int ks_web_config_load(struct ks_web_config *wc, const char *path);
void ks_web_config_free(struct ks_web_config *wc);
/*
 * True when @user/@pass match a configured user (bcrypt via crypt_r, or a
 * hit in @cache, which may be NULL); true when no users are configured.  An
 * unknown user's password is checked against wc->dummy, so the time taken
 * does not tell which users exist.
 */
bool ks_web_auth_ok(const struct ks_web_config *wc, struct ks_auth_cache *cache, const char *user, const char *pass);

int ks_serve_main(int argc, char **argv);

#endif
