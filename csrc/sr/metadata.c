/* metadata.c — a small bounded JSON reader for the handful of keys an SR model's metadata
 * carries. The text comes from a file and is treated as hostile: every read is checked
 * against the end, nesting is capped, and nothing is allocated. */
#include "sr/metadata.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sr/sr_internal.h"

#define MAX_DEPTH 32

typedef struct cursor {
    const char *p;
    const char *end;
} cursor;

static void skip_space(cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static bool take(cursor *c, char ch)
{
    skip_space(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return true;
    }
    return false;
}

/* A string into out (truncated to cap - 1 bytes; escapes other than \" and \\ kept as '?'). */
static bool read_string(cursor *c, char *out, size_t cap)
{
    size_t n = 0;
    if (!take(c, '"'))
        return false;
    while (c->p < c->end && *c->p != '"') {
        char ch = *c->p++;
        if ((unsigned char)ch < 0x20)
            return false;
        if (ch == '\\') {
            if (c->p >= c->end)
                return false;
            char escaped = *c->p++;
            if (escaped == 'u') {
                if (c->end - c->p < 4)
                    return false;
                c->p += 4;
                ch = '?';
            } else {
                ch = escaped == '"' || escaped == '\\' || escaped == '/' ? escaped : '?';
            }
        }
        if (out && n + 1 < cap)
            out[n++] = ch;
    }
    if (out && cap)
        out[n] = '\0';
    return take(c, '"');
}

static bool read_number(cursor *c, double *value)
{
    skip_space(c);
    char text[40];
    size_t n = 0;
    while (c->p < c->end && n + 1 < sizeof text && strchr("+-0123456789.eE", *c->p) && *c->p)
        text[n++] = *c->p++;
    text[n] = '\0';
    if (n == 0)
        return false;
    char *stop;
    *value = strtod(text, &stop);
    return *stop == '\0';
}

static bool skip_value(cursor *c, int depth)
{
    if (depth > MAX_DEPTH)
        return false;
    skip_space(c);
    if (c->p >= c->end)
        return false;
    char ch = *c->p;
    if (ch == '"')
        return read_string(c, NULL, 0);
    if (ch == '{' || ch == '[') {
        char close = ch == '{' ? '}' : ']';
        c->p++;
        if (take(c, close))
            return true;
        do {
            if (ch == '{' && (!read_string(c, NULL, 0) || !take(c, ':')))
                return false;
            if (!skip_value(c, depth + 1))
                return false;
        } while (take(c, ','));
        return take(c, close);
    }
    static const char *const words[] = {"true", "false", "null"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        size_t len = strlen(words[i]);
        if ((size_t)(c->end - c->p) >= len && memcmp(c->p, words[i], len) == 0) {
            c->p += len;
            return true;
        }
    }
    double ignored;
    return read_number(c, &ignored);
}

static nxe_status read_int_value(cursor *c, const char *key, int32_t *out)
{
    double value;
    if (!read_number(c, &value) || !(value >= -2147483648.0 && value <= 2147483647.0) ||
        value != floor(value))
        return sr_error(NXE_ERROR_FORMAT, "SR model metadata: \"%s\" must be an integer", key);
    *out = (int32_t)value;
    return NXE_OK;
}

nxe_status sr_read_metadata(const char *json, size_t size, sr_metadata *out)
{
    memset(out, 0, sizeof *out);
    out->scale = out->channels = out->receptive_radius = -1;
    cursor c = {json, json + size};
    if (!take(&c, '{'))
        return sr_error(NXE_ERROR_FORMAT, "SR model metadata is not a JSON object");
    if (take(&c, '}'))
        return NXE_OK;
    do {
        char key[64];
        if (!read_string(&c, key, sizeof key) || !take(&c, ':'))
            return sr_error(NXE_ERROR_FORMAT, "SR model metadata: malformed JSON near byte %zu",
                            (size_t)(c.p - json));
        struct {
            const char *key;
            char *text;
            size_t cap;
            int32_t *number;
        } fields[] = {
            {"task", out->task, sizeof out->task, NULL},
            {"name", out->name, sizeof out->name, NULL},
            {"input", out->input, sizeof out->input, NULL},
            {"output", out->output, sizeof out->output, NULL},
            {"precision", out->precision, sizeof out->precision, NULL},
            {"scale", NULL, 0, &out->scale},
            {"channels", NULL, 0, &out->channels},
            {"receptive_radius", NULL, 0, &out->receptive_radius},
        };
        size_t f = 0;
        while (f < sizeof fields / sizeof fields[0] && strcmp(fields[f].key, key) != 0)
            f++;
        bool ok;
        if (f == sizeof fields / sizeof fields[0]) {
            ok = skip_value(&c, 1);
        } else if (fields[f].text) {
            skip_space(&c);
            if (c.p >= c.end || *c.p != '"')
                return sr_error(NXE_ERROR_FORMAT, "SR model metadata: \"%s\" must be a string",
                                key);
            ok = read_string(&c, fields[f].text, fields[f].cap);
        } else {
            nxe_status status = read_int_value(&c, key, fields[f].number);
            if (status != NXE_OK)
                return status;
            ok = true;
        }
        if (!ok)
            return sr_error(NXE_ERROR_FORMAT, "SR model metadata: malformed JSON near byte %zu",
                            (size_t)(c.p - json));
    } while (take(&c, ','));
    if (!take(&c, '}'))
        return sr_error(NXE_ERROR_FORMAT, "SR model metadata: malformed JSON near byte %zu",
                        (size_t)(c.p - json));
    return NXE_OK;
}
