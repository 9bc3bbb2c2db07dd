/* container.h — the file container shared by model files (.nxm) and compiled binaries (.nxb):
 * a fixed little-endian header, a section table with a SHA-256 per section, and aligned
 * sections. Also the bounds-checked byte reader and the two-pass writer all encoders use.
 * Readers treat every byte as hostile. docs/formats.md describes the layout. */
#ifndef NXE_CONTAINER_H
#define NXE_CONTAINER_H

#include "core/core.h"
#include "core/limits.h"

#define NXE_CONTAINER_HEADER_SIZE 64
#define NXE_CONTAINER_ENTRY_SIZE 56
#define NXE_CONTAINER_FORMAT_MAJOR 1
#define NXE_CONTAINER_FORMAT_MINOR 0
#define NXE_CONTAINER_BYTE_ORDER_MARK 0x01020304u

extern const char nxe_model_magic[8];  /* "NXEMODEL" */
extern const char nxe_binary_magic[8]; /* "NXEPLAN\0" */

enum nxe_section_type {
    NXE_SECTION_METADATA = 1,       /* UTF-8 JSON, part of the fingerprint */
    NXE_SECTION_ANNOTATIONS = 2,    /* UTF-8 JSON, not part of the fingerprint */
    NXE_SECTION_GRAPH = 3,          /* the portable graph */
    NXE_SECTION_TENSORS = 4,        /* tensor index */
    NXE_SECTION_DATA = 5,           /* tensor bytes, each tensor aligned */
    NXE_SECTION_FINGERPRINT = 6,    /* 32 bytes */
    NXE_SECTION_PLAN = 16,          /* .nxb: the compiled plan */
    NXE_SECTION_EMBEDDED_MODEL = 17 /* .nxb: the portable model it was compiled from */
};

typedef struct nxe_section {
    uint32_t type;
    uint64_t offset;
    uint64_t size;
    uint8_t sha256[32];
} nxe_section;

/* A parsed container: `base` is borrowed from the caller (a mapping or a buffer). */
typedef struct nxe_container {
    const uint8_t *base;
    size_t size;
    uint16_t format_major;
    uint16_t format_minor;
    uint32_t alignment;
    int32_t num_sections;
    nxe_section sections[NXE_LIMIT_SECTIONS];
} nxe_container;

/* Validates header, header checksum, section table (bounds, alignment, no overlap, no
 * duplicate types) against `size`. `what` names the file in messages. Section checksums are
 * checked separately. Errors: NXE_ERROR_FORMAT with the offset at fault. */
nxe_status nxe_container_parse(const void *data, size_t size, const char magic[8], const char *what,
                               nxe_container *out);
/* The section of a type, or NULL. */
const nxe_section *nxe_container_find(const nxe_container *container, uint32_t type);
/* Compares a section's bytes with its recorded SHA-256. */
nxe_status nxe_container_verify(const nxe_container *container, const nxe_section *section,
                                const char *what);

/* Writing: plan the layout from section sizes, write each section at its offset, then
 * finish (header, table, checksums). */
typedef struct nxe_container_layout {
    uint32_t alignment;
    int32_t num_sections;
    uint32_t types[NXE_LIMIT_SECTIONS];
    uint64_t sizes[NXE_LIMIT_SECTIONS];
    uint64_t offsets[NXE_LIMIT_SECTIONS]; /* filled by plan */
    uint64_t file_size;                   /* filled by plan */
} nxe_container_layout;

nxe_status nxe_container_plan(nxe_container_layout *layout);
/* `file` holds layout->file_size bytes with every section already written in place. Zeroes
 * the padding, writes the header and table. */
void nxe_container_finish(uint8_t *file, const nxe_container_layout *layout, const char magic[8]);

/* ---- bounds-checked reading ---- */

typedef struct nxe_reader {
    const uint8_t *data;
    size_t size;
    size_t pos;
    const char *what;              /* names the section in messages */
    size_t base_offset;            /* file offset of data[0], for messages */
    const struct nxe_context *ops; /* op types registered here are found before the built-ins */
} nxe_reader;

nxe_reader nxe_reader_make(const void *data, size_t size, const char *what, size_t base_offset);
/* Each fails with NXE_ERROR_FORMAT naming the section and file offset when bytes run out. */
nxe_status nxe_read_u8(nxe_reader *r, uint8_t *value);
nxe_status nxe_read_u32(nxe_reader *r, uint32_t *value);
nxe_status nxe_read_i32(nxe_reader *r, int32_t *value);
nxe_status nxe_read_u64(nxe_reader *r, uint64_t *value);
nxe_status nxe_read_i64(nxe_reader *r, int64_t *value);
nxe_status nxe_read_f32(nxe_reader *r, float *value);
nxe_status nxe_read_f64(nxe_reader *r, double *value);
/* Borrows `size` bytes in place. */
nxe_status nxe_read_bytes(nxe_reader *r, size_t size, const uint8_t **bytes);
/* u32 length then bytes, no NUL inside, at most max_length; copied NUL-terminated into a new
 * nxe_alloc'd string the caller frees. */
nxe_status nxe_read_string(nxe_reader *r, uint32_t max_length, char **value);
/* A count that must fit in what is left when each item takes at least `min_item_size` bytes:
 * absurd counts fail before anything is allocated. */
nxe_status nxe_read_count(nxe_reader *r, uint32_t max_count, size_t min_item_size, uint32_t *count);
nxe_status nxe_reader_expect_end(const nxe_reader *r);
/* Fails with NXE_ERROR_FORMAT and a message naming the section and offset. */
nxe_status nxe_reader_error(const nxe_reader *r, const char *fmt, ...) NXE_PRINTF(2, 3);

/* ---- two-pass writing: with data == NULL only counts ---- */

typedef struct nxe_writer {
    uint8_t *data;
    size_t capacity;
    size_t size;
} nxe_writer;

nxe_writer nxe_writer_make(void *data, size_t capacity);
void nxe_write_u8(nxe_writer *w, uint8_t value);
void nxe_write_u32(nxe_writer *w, uint32_t value);
void nxe_write_i32(nxe_writer *w, int32_t value);
void nxe_write_u64(nxe_writer *w, uint64_t value);
void nxe_write_i64(nxe_writer *w, int64_t value);
void nxe_write_f32(nxe_writer *w, float value);
void nxe_write_f64(nxe_writer *w, double value);
void nxe_write_bytes(nxe_writer *w, const void *bytes, size_t size);
void nxe_write_string(nxe_writer *w, const char *value);
void nxe_write_zeros(nxe_writer *w, size_t size);

/* Little-endian scalars in place. */
void nxe_store_u32(uint8_t *p, uint32_t value);
void nxe_store_u64(uint8_t *p, uint64_t value);
uint32_t nxe_load_u32(const uint8_t *p);
uint64_t nxe_load_u64(const uint8_t *p);

#endif
