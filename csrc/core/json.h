/* json.h — a bounded reader of JSON text (RFC 8259) for the library's own use (tokenizer.json,
 * model metadata): it parses a whole document into an immutable tree, refusing what is not
 * strict JSON with a message giving the byte offset. Internal; it must not allocate per lookup
 * nor accept input beyond the limits below, whatever the bytes. */
#ifndef NXE_JSON_H
#define NXE_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "nxe/nxe.h"

/* Nesting depth of arrays and objects (serde_json's default). */
#define NXE_JSON_MAX_DEPTH 128
/* Bytes of one document (256 MiB). */
#define NXE_JSON_MAX_SIZE ((size_t)256 << 20)
/* Items of one array or members of one object. */
#define NXE_JSON_MAX_ITEMS 16777216

typedef struct nxe_json nxe_json;
typedef struct nxe_json_value nxe_json_value;

typedef enum nxe_json_type {
    NXE_JSON_NULL = 0,
    NXE_JSON_BOOL = 1,
    NXE_JSON_NUMBER = 2,
    NXE_JSON_STRING = 3,
    NXE_JSON_ARRAY = 4,
    NXE_JSON_OBJECT = 5,
} nxe_json_type;

/* Parses `size` bytes of JSON (not NUL-terminated; one value, whitespace around it). The
 * document keeps no pointer into `text`. NXE_ERROR_INVALID_ARGUMENT (NULL text or out),
 * NXE_ERROR_FORMAT (malformed JSON, invalid UTF-8, a lone surrogate escape, nesting deeper
 * than NXE_JSON_MAX_DEPTH, more than NXE_JSON_MAX_ITEMS items, a text over NXE_JSON_MAX_SIZE:
 * the message gives the byte offset), NXE_ERROR_OUT_OF_MEMORY; *out is then NULL. */
nxe_status nxe_json_parse(const char *text, size_t size, nxe_json **out);
/* Frees a document and every value and string it gave out; NULL is a no-op. */
void nxe_json_free(nxe_json *doc);

/* The document's top value (never NULL for a parsed document; NULL for a NULL doc). */
const nxe_json_value *nxe_json_root(const nxe_json *doc);
/* The value's type; NXE_JSON_NULL for a NULL value. */
nxe_json_type nxe_json_kind(const nxe_json_value *v);
/* The member `key` of an object (the last one when a key repeats); NULL when absent, or when
 * `object` is not an object. */
const nxe_json_value *nxe_json_get(const nxe_json_value *object, const char *key);
/* Items of an array or members of an object; 0 for anything else. */
int32_t nxe_json_count(const nxe_json_value *v);
/* Item i of an array; NULL when out of range or not an array. */
const nxe_json_value *nxe_json_item(const nxe_json_value *array, int32_t i);
/* Member i of an object in document order, its key (decoded UTF-8, NUL-terminated, may hold
 * NULs: key_size counts the bytes) in *key; NULL (and *key NULL, *key_size 0) when out of
 * range or not an object. key and key_size may be NULL. */
const nxe_json_value *nxe_json_member(const nxe_json_value *object, int32_t i, const char **key,
                                      size_t *key_size);
/* A string's decoded UTF-8 (NUL-terminated; *size counts the bytes, which may include NULs);
 * NULL (and *size 0) when not a string. size may be NULL. */
const char *nxe_json_string(const nxe_json_value *v, size_t *size);
/* 1 and the number in *out when v is a number, else 0 (*out untouched). */
int nxe_json_number(const nxe_json_value *v, double *out);
/* 1 and 0/1 in *out when v is a boolean, else 0 (*out untouched). */
int nxe_json_bool(const nxe_json_value *v, int *out);
/* Where the value's text lies in the parsed text: byte offset and size (0, 0 for NULL). */
void nxe_json_span(const nxe_json_value *v, size_t *offset, size_t *size);

#endif
