/* metadata.h — what libnxe_sr reads from an SR model file's metadata JSON. Internal. */
#ifndef NXE_SR_METADATA_H
#define NXE_SR_METADATA_H

#include <stddef.h>
#include <stdint.h>

#include "nxe/nxe.h"

typedef struct sr_metadata {
    char task[32];
    char name[64];
    char input[64];
    char output[64];
    char precision[16]; /* "int8" for an int8 variant; empty when absent (fp32 weights) */
    int32_t scale;      /* -1 when absent */
    int32_t channels;
    int32_t receptive_radius;
} sr_metadata;

/* Reads the top-level keys above from a JSON object of `size` bytes (not NUL-terminated);
 * other keys and nested values are skipped. NXE_ERROR_FORMAT with a message on malformed
 * text or a key of the wrong type. */
nxe_status sr_read_metadata(const char *json, size_t size, sr_metadata *out);

#endif
