/* A streaming JSON writer: the only code in ksight that produces JSON text. */
#ifndef KS_CORE_JSON_H
#define KS_CORE_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct ks_json;

/* Returns NULL with errno set on allocation failure. */
struct ks_json *ks_json_new(FILE *out);
void ks_json_free(struct ks_json *j);

void ks_json_obj_begin(struct ks_json *j);
void ks_json_obj_end(struct ks_json *j);
void ks_json_arr_begin(struct ks_json *j);
void ks_json_arr_end(struct ks_json *j);
/* Starts a member of the current object; a value call must follow. */
void ks_json_key(struct ks_json *j, const char *key);
void ks_json_str(struct ks_json *j, const char *s);
void ks_json_u64(struct ks_json *j, uint64_t v);
void ks_json_i64(struct ks_json *j, int64_t v);
/* Exactly (the shortest text that reads back the same); non-finite as null: JSON has no NaN. */
void ks_json_double(struct ks_json *j, double v);
void ks_json_bool(struct ks_json *j, bool v);
/*
 * Whether @s is a decimal number as JSON writes it (-?(0|[1-9]digits)(.digits)?, no exponent)
 * that a double-reading parser keeps exactly when it is an integer (at most 2^53 in size).
 */
bool ks_json_is_number_text(const char *s);
/* @s as a JSON number, as it is written, where ks_json_is_number_text; else as a string. */
void ks_json_str_or_number(struct ks_json *j, const char *s);
void ks_json_null(struct ks_json *j);

static inline void ks_json_kv_str(struct ks_json *j, const char *k, const char *v)
{
	ks_json_key(j, k);
	ks_json_str(j, v);
}
static inline void ks_json_kv_u64(struct ks_json *j, const char *k, uint64_t v)
{
	ks_json_key(j, k);
	ks_json_u64(j, v);
}
static inline void ks_json_kv_double(struct ks_json *j, const char *k, double v)
{
	ks_json_key(j, k);
	ks_json_double(j, v);
}

#endif
