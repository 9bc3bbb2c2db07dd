/* json.c — the bounded JSON reader of json.h: a recursive-descent parser (depth capped, so the
 * recursion is too) building values in an arena owned by the document; strings are decoded and
 * checked as strict UTF-8 on the way in, so readers never see an invalid byte sequence. */
#include "core/json.h"

#include <locale.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/utf8.h"

typedef struct json_member {
    const char *key; /* NULL for array items */
    size_t key_size;
    nxe_json_value *value;
} json_member;

struct nxe_json_value {
    nxe_json_type type;
    int32_t count;
    size_t offset, size; /* the value's text */
    union {
        int boolean;
        double number;
        struct {
            char *bytes;
            size_t size;
        } string;
        nxe_json_value **items;
        json_member *members;
    } as;
};

typedef struct json_chunk {
    struct json_chunk *next;
    size_t used, capacity;
    _Alignas(max_align_t) unsigned char data[];
} json_chunk;

struct nxe_json {
    json_chunk *chunks;
    nxe_json_value *root;
};

typedef struct json_parser {
    const unsigned char *text;
    size_t size, pos;
    nxe_json *doc;
    json_member *stack; /* children of the open containers, innermost last */
    size_t stack_size, stack_capacity;
    nxe_status status;
} json_parser;

#define JSON_CHUNK_SIZE ((size_t)64 << 10)
#define JSON_MAX_NUMBER 512

static void *json_arena_alloc(nxe_json *doc, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    json_chunk *chunk = doc->chunks;
    if (!chunk || chunk->capacity - chunk->used < size) {
        size_t capacity = size > JSON_CHUNK_SIZE / 4 ? size : JSON_CHUNK_SIZE;
        json_chunk *fresh = malloc(sizeof *fresh + capacity);
        if (!fresh)
            return NULL;
        fresh->used = 0;
        fresh->capacity = capacity;
        if (chunk && capacity != JSON_CHUNK_SIZE) {
            /* A big block goes behind the current chunk, which keeps serving small ones. */
            fresh->next = chunk->next;
            chunk->next = fresh;
        } else {
            fresh->next = chunk;
            doc->chunks = fresh;
        }
        chunk = fresh;
    }
    void *p = chunk->data + chunk->used;
    chunk->used += size;
    return p;
}

static nxe_status json_fail(json_parser *p, size_t at, const char *what)
{
    if (p->status == NXE_OK)
        p->status = nxe_error(NXE_ERROR_FORMAT, "JSON: %s at byte %zu", what, at);
    return p->status;
}

static nxe_status json_out_of_memory(json_parser *p)
{
    if (p->status == NXE_OK)
        p->status = nxe_error(NXE_ERROR_OUT_OF_MEMORY, "JSON: out of memory at byte %zu", p->pos);
    return p->status;
}

static void json_skip_space(json_parser *p)
{
    while (p->pos < p->size) {
        unsigned char c = p->text[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            break;
        p->pos++;
    }
}

static bool json_literal(json_parser *p, const char *word)
{
    size_t n = strlen(word);
    if (p->size - p->pos < n || memcmp(p->text + p->pos, word, n) != 0)
        return false;
    p->pos += n;
    return true;
}

static int json_hex4(const unsigned char *s, uint32_t *out)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char c = s[i];
        uint32_t d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            d = (uint32_t)(c - 'A' + 10);
        else
            return 0;
        v = v << 4 | d;
    }
    *out = v;
    return 1;
}

/* Reads the string opening at p->pos ('"') into the arena. */
static nxe_status json_parse_string(json_parser *p, char **bytes, size_t *size)
{
    size_t start = ++p->pos;
    /* The decoded string is never longer than its text: find the closing quote first. */
    size_t end = start;
    while (end < p->size && p->text[end] != '"')
        end += p->text[end] == '\\' ? 2 : 1;
    if (end >= p->size)
        return json_fail(p, start - 1, "unterminated string");
    char *out = json_arena_alloc(p->doc, end - start + 1);
    if (!out)
        return json_out_of_memory(p);
    size_t n = 0;
    const unsigned char *s = p->text;
    size_t i = start;
    while (i < end) {
        unsigned char c = s[i];
        if (c == '\\') {
            unsigned char e = s[i + 1];
            switch (e) {
            case '"': out[n++] = '"'; break;
            case '\\': out[n++] = '\\'; break;
            case '/': out[n++] = '/'; break;
            case 'b': out[n++] = '\b'; break;
            case 'f': out[n++] = '\f'; break;
            case 'n': out[n++] = '\n'; break;
            case 'r': out[n++] = '\r'; break;
            case 't': out[n++] = '\t'; break;
            case 'u': {
                uint32_t cp = 0;
                if (end - i < 6 || !json_hex4(s + i + 2, &cp))
                    return json_fail(p, i, "bad \\u escape in a string");
                if (cp >= 0xDC00 && cp <= 0xDFFF)
                    return json_fail(p, i, "lone low surrogate escape in a string");
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    uint32_t low;
                    if (end - i < 12 || s[i + 6] != '\\' || s[i + 7] != 'u' ||
                        !json_hex4(s + i + 8, &low) || low < 0xDC00 || low > 0xDFFF)
                        return json_fail(p, i, "lone high surrogate escape in a string");
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                    i += 6;
                }
                n += nxe_utf8_encode(cp, out + n);
                i += 6;
                continue;
            }
            default: return json_fail(p, i, "bad escape in a string");
            }
            i += 2;
        } else if (c < 0x20) {
            return json_fail(p, i, "control character in a string");
        } else {
            uint32_t cp = 0;
            size_t len = nxe_utf8_decode(s + i, end - i, &cp);
            if (len == 0)
                return json_fail(p, i, "invalid UTF-8 in a string");
            memcpy(out + n, s + i, len);
            n += len;
            i += len;
        }
    }
    out[n] = '\0';
    p->pos = end + 1;
    *bytes = out;
    *size = n;
    return NXE_OK;
}

static nxe_status json_parse_number(json_parser *p, double *out)
{
    size_t start = p->pos, i = p->pos;
    const unsigned char *s = p->text;
    if (i < p->size && s[i] == '-')
        i++;
    if (i < p->size && s[i] == '0') {
        i++;
    } else if (i < p->size && s[i] >= '1' && s[i] <= '9') {
        while (i < p->size && s[i] >= '0' && s[i] <= '9')
            i++;
    } else {
        return json_fail(p, start, "bad number");
    }
    if (i < p->size && s[i] == '.') {
        i++;
        if (i >= p->size || s[i] < '0' || s[i] > '9')
            return json_fail(p, start, "bad number");
        while (i < p->size && s[i] >= '0' && s[i] <= '9')
            i++;
    }
    if (i < p->size && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < p->size && (s[i] == '+' || s[i] == '-'))
            i++;
        if (i >= p->size || s[i] < '0' || s[i] > '9')
            return json_fail(p, start, "bad number");
        while (i < p->size && s[i] >= '0' && s[i] <= '9')
            i++;
    }
    if (i - start >= JSON_MAX_NUMBER)
        return json_fail(p, start, "number too long");
    char buf[JSON_MAX_NUMBER];
    memcpy(buf, s + start, i - start);
    buf[i - start] = '\0';
    /* strtod reads the C locale's decimal point only under that locale: give it the host's. */
    char point = localeconv()->decimal_point[0];
    if (point != '.') {
        char *dot = strchr(buf, '.');
        if (dot)
            *dot = point;
    }
    char *stop;
    double v = strtod(buf, &stop);
    if (v != v || v > 1.7976931348623157e308 || v < -1.7976931348623157e308)
        return json_fail(p, start, "number out of range");
    *out = v;
    p->pos = i;
    return NXE_OK;
}

static nxe_status json_push(json_parser *p, const char *key, size_t key_size, nxe_json_value *v)
{
    if (p->stack_size == p->stack_capacity) {
        size_t capacity = p->stack_capacity ? p->stack_capacity * 2 : 64;
        json_member *grown = realloc(p->stack, capacity * sizeof *grown);
        if (!grown)
            return json_out_of_memory(p);
        p->stack = grown;
        p->stack_capacity = capacity;
    }
    p->stack[p->stack_size++] = (json_member){key, key_size, v};
    return NXE_OK;
}

static nxe_status json_parse_value(json_parser *p, int depth, nxe_json_value **out);

static nxe_status json_parse_container(json_parser *p, int depth, nxe_json_value *v)
{
    bool object = p->text[p->pos] == '{';
    unsigned char close = object ? '}' : ']';
    if (depth >= NXE_JSON_MAX_DEPTH)
        return json_fail(p, p->pos, "nesting deeper than 128");
    p->pos++;
    size_t base = p->stack_size;
    json_skip_space(p);
    if (p->pos < p->size && p->text[p->pos] == close) {
        p->pos++;
    } else {
        for (;;) {
            char *key = NULL;
            size_t key_size = 0;
            json_skip_space(p);
            if (object) {
                if (p->pos >= p->size || p->text[p->pos] != '"')
                    return json_fail(p, p->pos, "expected a member name");
                if (json_parse_string(p, &key, &key_size) != NXE_OK)
                    return p->status;
                json_skip_space(p);
                if (p->pos >= p->size || p->text[p->pos] != ':')
                    return json_fail(p, p->pos, "expected ':'");
                p->pos++;
            }
            nxe_json_value *item;
            if (json_parse_value(p, depth + 1, &item) != NXE_OK)
                return p->status;
            if (p->stack_size - base >= NXE_JSON_MAX_ITEMS)
                return json_fail(p, item->offset, "more than 16777216 items in one container");
            if (json_push(p, key, key_size, item) != NXE_OK)
                return p->status;
            json_skip_space(p);
            if (p->pos < p->size && p->text[p->pos] == ',') {
                p->pos++;
                continue;
            }
            if (p->pos < p->size && p->text[p->pos] == close) {
                p->pos++;
                break;
            }
            return json_fail(p, p->pos, object ? "expected ',' or '}'" : "expected ',' or ']'");
        }
    }
    size_t count = p->stack_size - base;
    v->type = object ? NXE_JSON_OBJECT : NXE_JSON_ARRAY;
    v->count = (int32_t)count;
    if (object) {
        v->as.members = json_arena_alloc(p->doc, count * sizeof(json_member) + 1);
        if (!v->as.members)
            return json_out_of_memory(p);
        if (count)
            memcpy(v->as.members, p->stack + base, count * sizeof(json_member));
    } else {
        v->as.items = json_arena_alloc(p->doc, count * sizeof(nxe_json_value *) + 1);
        if (!v->as.items)
            return json_out_of_memory(p);
        for (size_t i = 0; i < count; i++)
            v->as.items[i] = p->stack[base + i].value;
    }
    p->stack_size = base;
    return NXE_OK;
}

static nxe_status json_parse_value(json_parser *p, int depth, nxe_json_value **out)
{
    json_skip_space(p);
    if (p->pos >= p->size)
        return json_fail(p, p->pos, "unexpected end of text");
    nxe_json_value *v = json_arena_alloc(p->doc, sizeof *v);
    if (!v)
        return json_out_of_memory(p);
    memset(v, 0, sizeof *v);
    v->offset = p->pos;
    unsigned char c = p->text[p->pos];
    nxe_status status = NXE_OK;
    if (c == '{' || c == '[') {
        status = json_parse_container(p, depth, v);
    } else if (c == '"') {
        v->type = NXE_JSON_STRING;
        status = json_parse_string(p, &v->as.string.bytes, &v->as.string.size);
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        v->type = NXE_JSON_NUMBER;
        status = json_parse_number(p, &v->as.number);
    } else if (json_literal(p, "true")) {
        v->type = NXE_JSON_BOOL;
        v->as.boolean = 1;
    } else if (json_literal(p, "false")) {
        v->type = NXE_JSON_BOOL;
    } else if (json_literal(p, "null")) {
        v->type = NXE_JSON_NULL;
    } else {
        status = json_fail(p, p->pos, "unexpected character");
    }
    if (status != NXE_OK)
        return status;
    v->size = p->pos - v->offset;
    *out = v;
    return NXE_OK;
}

nxe_status nxe_json_parse(const char *text, size_t size, nxe_json **out)
{
    if (!out)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "JSON: out is NULL");
    *out = NULL;
    if (!text)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "JSON: text is NULL");
    if (size > NXE_JSON_MAX_SIZE)
        return nxe_error(NXE_ERROR_FORMAT, "JSON: text of %zu bytes, over the limit of %zu", size,
                         NXE_JSON_MAX_SIZE);
    nxe_json *doc = calloc(1, sizeof *doc);
    if (!doc)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "JSON: out of memory");
    json_parser p = {(const unsigned char *)text, size, 0, doc, NULL, 0, 0, NXE_OK};
    nxe_json_value *root = NULL;
    if (json_parse_value(&p, 0, &root) == NXE_OK) {
        json_skip_space(&p);
        if (p.pos != p.size)
            json_fail(&p, p.pos, "text after the value");
    }
    free(p.stack);
    if (p.status != NXE_OK) {
        nxe_json_free(doc);
        return p.status;
    }
    doc->root = root;
    *out = doc;
    return NXE_OK;
}

void nxe_json_free(nxe_json *doc)
{
    if (!doc)
        return;
    json_chunk *chunk = doc->chunks;
    while (chunk) {
        json_chunk *next = chunk->next;
        free(chunk);
        chunk = next;
    }
    free(doc);
}

const nxe_json_value *nxe_json_root(const nxe_json *doc)
{
    return doc ? doc->root : NULL;
}

nxe_json_type nxe_json_kind(const nxe_json_value *v)
{
    return v ? v->type : NXE_JSON_NULL;
}

const nxe_json_value *nxe_json_get(const nxe_json_value *object, const char *key)
{
    if (!object || object->type != NXE_JSON_OBJECT || !key)
        return NULL;
    size_t n = strlen(key);
    for (int32_t i = object->count - 1; i >= 0; i--) {
        const json_member *m = &object->as.members[i];
        if (m->key_size == n && memcmp(m->key, key, n) == 0)
            return m->value;
    }
    return NULL;
}

int32_t nxe_json_count(const nxe_json_value *v)
{
    return v && (v->type == NXE_JSON_ARRAY || v->type == NXE_JSON_OBJECT) ? v->count : 0;
}

const nxe_json_value *nxe_json_item(const nxe_json_value *array, int32_t i)
{
    if (!array || array->type != NXE_JSON_ARRAY || i < 0 || i >= array->count)
        return NULL;
    return array->as.items[i];
}

const nxe_json_value *nxe_json_member(const nxe_json_value *object, int32_t i, const char **key,
                                      size_t *key_size)
{
    bool ok = object && object->type == NXE_JSON_OBJECT && i >= 0 && i < object->count;
    const json_member *m = ok ? &object->as.members[i] : NULL;
    if (key)
        *key = m ? m->key : NULL;
    if (key_size)
        *key_size = m ? m->key_size : 0;
    return m ? m->value : NULL;
}

const char *nxe_json_string(const nxe_json_value *v, size_t *size)
{
    bool ok = v && v->type == NXE_JSON_STRING;
    if (size)
        *size = ok ? v->as.string.size : 0;
    return ok ? v->as.string.bytes : NULL;
}

int nxe_json_number(const nxe_json_value *v, double *out)
{
    if (!v || v->type != NXE_JSON_NUMBER || !out)
        return 0;
    *out = v->as.number;
    return 1;
}

int nxe_json_bool(const nxe_json_value *v, int *out)
{
    if (!v || v->type != NXE_JSON_BOOL || !out)
        return 0;
    *out = v->as.boolean;
    return 1;
}

void nxe_json_span(const nxe_json_value *v, size_t *offset, size_t *size)
{
    if (offset)
        *offset = v ? v->offset : 0;
    if (size)
        *size = v ? v->size : 0;
}
