/* container.c — reading and writing the .nxm/.nxb container and the little-endian byte codec
 * behind every section encoder. Every offset and size is checked against the bytes at hand. */
#include <stdio.h>
#include <string.h>

#include "core/sha256.h"
#include "model/container.h"

const char nxe_model_magic[8] = {'N', 'X', 'E', 'M', 'O', 'D', 'E', 'L'};
const char nxe_binary_magic[8] = {'N', 'X', 'E', 'P', 'L', 'A', 'N', '\0'};

void nxe_store_u32(uint8_t *p, uint32_t value)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(value >> (8 * i));
}

void nxe_store_u64(uint8_t *p, uint64_t value)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(value >> (8 * i));
}

uint32_t nxe_load_u32(const uint8_t *p)
{
    uint32_t value = 0;
    for (int i = 0; i < 4; i++)
        value |= (uint32_t)p[i] << (8 * i);
    return value;
}

uint64_t nxe_load_u64(const uint8_t *p)
{
    uint64_t value = 0;
    for (int i = 0; i < 8; i++)
        value |= (uint64_t)p[i] << (8 * i);
    return value;
}

static uint16_t load_u16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static bool is_power_of_two(uint64_t x)
{
    return x && !(x & (x - 1));
}

static size_t table_end(int32_t num_sections)
{
    return NXE_CONTAINER_HEADER_SIZE + (size_t)num_sections * NXE_CONTAINER_ENTRY_SIZE;
}

/* The header digest covers bytes [0, 32) and the section table. */
static void header_digest(const uint8_t *file, int32_t num_sections, uint8_t digest[32])
{
    nxe_sha256_ctx ctx;
    nxe_sha256_init(&ctx);
    nxe_sha256_update(&ctx, file, 32);
    nxe_sha256_update(&ctx, file + NXE_CONTAINER_HEADER_SIZE,
                      (size_t)num_sections * NXE_CONTAINER_ENTRY_SIZE);
    nxe_sha256_final(&ctx, digest);
}

nxe_status nxe_container_parse(const void *data, size_t size, const char magic[8], const char *what,
                               nxe_container *out)
{
    memset(out, 0, sizeof *out);
    const uint8_t *file = data;
    if (!file || size < NXE_CONTAINER_HEADER_SIZE)
        return nxe_error(NXE_ERROR_FORMAT, "%s: %zu bytes is too short for an nxe file header (%d)",
                         what, size, NXE_CONTAINER_HEADER_SIZE);
    if (memcmp(file, magic, 8) != 0)
        return nxe_error(NXE_ERROR_FORMAT, "%s: wrong magic at offset 0: not an nxe %s file", what,
                         memcmp(magic, nxe_model_magic, 8) == 0 ? "model (.nxm)" : "binary (.nxb)");
    uint16_t major = load_u16(file + 8), minor = load_u16(file + 10);
    if (nxe_load_u32(file + 12) != NXE_CONTAINER_BYTE_ORDER_MARK)
        return nxe_error(NXE_ERROR_FORMAT, "%s: byte-order mark at offset 12 is 0x%08x, not 0x%08x",
                         what, nxe_load_u32(file + 12), NXE_CONTAINER_BYTE_ORDER_MARK);
    if (major != NXE_CONTAINER_FORMAT_MAJOR)
        return nxe_error(NXE_ERROR_UNSUPPORTED,
                         "%s: format version %u.%u; this library reads major version %d", what,
                         major, minor, NXE_CONTAINER_FORMAT_MAJOR);
    uint32_t alignment = nxe_load_u32(file + 16);
    if (!is_power_of_two(alignment) || alignment < NXE_LIMIT_MIN_ALIGNMENT ||
        alignment > NXE_LIMIT_MAX_ALIGNMENT)
        return nxe_error(NXE_ERROR_FORMAT,
                         "%s: alignment %u at offset 16 is not a power of two in [%u, %u]", what,
                         alignment, NXE_LIMIT_MIN_ALIGNMENT, NXE_LIMIT_MAX_ALIGNMENT);
    uint32_t num_sections = nxe_load_u32(file + 20);
    if (num_sections > NXE_LIMIT_SECTIONS)
        return nxe_error(NXE_ERROR_FORMAT, "%s: %u sections at offset 20; at most %d are allowed",
                         what, num_sections, NXE_LIMIT_SECTIONS);
    uint64_t file_size = nxe_load_u64(file + 24);
    if (file_size != size)
        return nxe_error(NXE_ERROR_FORMAT,
                         "%s: the header records %llu bytes but %zu are present (truncated or "
                         "padded file)",
                         what, (unsigned long long)file_size, size);
    if (table_end((int32_t)num_sections) > size)
        return nxe_error(NXE_ERROR_FORMAT, "%s: the section table runs past the end of the file",
                         what);
    uint8_t digest[32];
    header_digest(file, (int32_t)num_sections, digest);
    if (memcmp(digest, file + 32, 32) != 0)
        return nxe_error(NXE_ERROR_FORMAT,
                         "%s: header checksum mismatch (header or section table corrupted)", what);

    out->base = file;
    out->size = size;
    out->format_major = major;
    out->format_minor = minor;
    out->alignment = alignment;
    out->num_sections = (int32_t)num_sections;
    for (uint32_t i = 0; i < num_sections; i++) {
        const uint8_t *entry = file + table_end((int32_t)i);
        nxe_section *section = &out->sections[i];
        section->type = nxe_load_u32(entry);
        section->offset = nxe_load_u64(entry + 8);
        section->size = nxe_load_u64(entry + 16);
        memcpy(section->sha256, entry + 24, 32);
        size_t entry_offset = table_end((int32_t)i);
        if (nxe_load_u32(entry + 4) != 0)
            return nxe_error(NXE_ERROR_FORMAT,
                             "%s: reserved field of section %u (offset %zu) is not 0", what, i,
                             entry_offset + 4);
        if (section->offset < table_end((int32_t)num_sections) || section->offset > size ||
            section->size > size - section->offset)
            return nxe_error(NXE_ERROR_FORMAT,
                             "%s: section %u (type %u) at offset %llu with %llu bytes lies outside "
                             "the file's data area [%zu, %zu)",
                             what, i, section->type, (unsigned long long)section->offset,
                             (unsigned long long)section->size, table_end((int32_t)num_sections),
                             size);
        if (section->offset % alignment != 0)
            return nxe_error(NXE_ERROR_FORMAT,
                             "%s: section %u at offset %llu is not %u-byte aligned", what, i,
                             (unsigned long long)section->offset, alignment);
        for (uint32_t j = 0; j < i; j++) {
            const nxe_section *other = &out->sections[j];
            if (other->type == section->type)
                return nxe_error(NXE_ERROR_FORMAT, "%s: section type %u appears twice", what,
                                 section->type);
            if (section->offset < other->offset + other->size &&
                other->offset < section->offset + section->size)
                return nxe_error(NXE_ERROR_FORMAT, "%s: sections %u and %u overlap", what, j, i);
        }
    }
    return NXE_OK;
}

const nxe_section *nxe_container_find(const nxe_container *container, uint32_t type)
{
    for (int32_t i = 0; i < container->num_sections; i++)
        if (container->sections[i].type == type)
            return &container->sections[i];
    return NULL;
}

nxe_status nxe_container_verify(const nxe_container *container, const nxe_section *section,
                                const char *what)
{
    uint8_t digest[32];
    nxe_sha256(container->base + section->offset, (size_t)section->size, digest);
    if (memcmp(digest, section->sha256, 32) != 0)
        return nxe_error(NXE_ERROR_FORMAT,
                         "%s: checksum mismatch in section type %u (offset %llu, %llu bytes)", what,
                         section->type, (unsigned long long)section->offset,
                         (unsigned long long)section->size);
    return NXE_OK;
}

static uint64_t align_up(uint64_t value, uint64_t alignment)
{
    return (value + alignment - 1) / alignment * alignment;
}

nxe_status nxe_container_plan(nxe_container_layout *layout)
{
    if (!is_power_of_two(layout->alignment) || layout->alignment < NXE_LIMIT_MIN_ALIGNMENT ||
        layout->alignment > NXE_LIMIT_MAX_ALIGNMENT)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "alignment %u is not a power of two in [%u, %u]", layout->alignment,
                         NXE_LIMIT_MIN_ALIGNMENT, NXE_LIMIT_MAX_ALIGNMENT);
    if (layout->num_sections < 0 || layout->num_sections > NXE_LIMIT_SECTIONS)
        return nxe_error(NXE_ERROR_INTERNAL, "container: %d sections", layout->num_sections);
    uint64_t offset = table_end(layout->num_sections);
    for (int32_t i = 0; i < layout->num_sections; i++) {
        offset = align_up(offset, layout->alignment);
        layout->offsets[i] = offset;
        if (layout->sizes[i] > UINT64_MAX / 2 - offset)
            return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "container: sections too large");
        offset += layout->sizes[i];
    }
    if (offset > SIZE_MAX)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "container: %llu bytes do not fit in memory",
                         (unsigned long long)offset);
    layout->file_size = offset;
    return NXE_OK;
}

void nxe_container_finish(uint8_t *file, const nxe_container_layout *layout, const char magic[8])
{
    /* zero the gaps between sections so files are reproducible */
    uint64_t cursor = table_end(layout->num_sections);
    for (int32_t i = 0; i < layout->num_sections; i++) {
        memset(file + cursor, 0, (size_t)(layout->offsets[i] - cursor));
        cursor = layout->offsets[i] + layout->sizes[i];
    }
    memset(file, 0, NXE_CONTAINER_HEADER_SIZE);
    memcpy(file, magic, 8);
    file[8] = NXE_CONTAINER_FORMAT_MAJOR & 0xff;
    file[9] = NXE_CONTAINER_FORMAT_MAJOR >> 8;
    file[10] = NXE_CONTAINER_FORMAT_MINOR & 0xff;
    file[11] = NXE_CONTAINER_FORMAT_MINOR >> 8;
    nxe_store_u32(file + 12, NXE_CONTAINER_BYTE_ORDER_MARK);
    nxe_store_u32(file + 16, layout->alignment);
    nxe_store_u32(file + 20, (uint32_t)layout->num_sections);
    nxe_store_u64(file + 24, layout->file_size);
    for (int32_t i = 0; i < layout->num_sections; i++) {
        uint8_t *entry = file + table_end(i);
        nxe_store_u32(entry, layout->types[i]);
        nxe_store_u32(entry + 4, 0);
        nxe_store_u64(entry + 8, layout->offsets[i]);
        nxe_store_u64(entry + 16, layout->sizes[i]);
        nxe_sha256(file + layout->offsets[i], (size_t)layout->sizes[i], entry + 24);
    }
    header_digest(file, layout->num_sections, file + 32);
}

/* ---- reader ---- */

nxe_reader nxe_reader_make(const void *data, size_t size, const char *what, size_t base_offset)
{
    return (nxe_reader){
        .data = data, .size = size, .pos = 0, .what = what, .base_offset = base_offset};
}

nxe_status nxe_reader_error(const nxe_reader *r, const char *fmt, ...)
{
    char message[700];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    return nxe_error(NXE_ERROR_FORMAT, "%s at file offset %zu: %s", r->what,
                     r->base_offset + r->pos, message);
}

static nxe_status need(nxe_reader *r, size_t size)
{
    if (size > r->size - r->pos)
        return nxe_reader_error(r, "needs %zu more bytes, only %zu remain", size, r->size - r->pos);
    return NXE_OK;
}

nxe_status nxe_read_bytes(nxe_reader *r, size_t size, const uint8_t **bytes)
{
    nxe_status status = need(r, size);
    if (status != NXE_OK)
        return status;
    *bytes = r->data + r->pos;
    r->pos += size;
    return NXE_OK;
}

nxe_status nxe_read_u8(nxe_reader *r, uint8_t *value)
{
    const uint8_t *p;
    nxe_status status = nxe_read_bytes(r, 1, &p);
    if (status == NXE_OK)
        *value = p[0];
    return status;
}

nxe_status nxe_read_u32(nxe_reader *r, uint32_t *value)
{
    const uint8_t *p;
    nxe_status status = nxe_read_bytes(r, 4, &p);
    if (status == NXE_OK)
        *value = nxe_load_u32(p);
    return status;
}

nxe_status nxe_read_i32(nxe_reader *r, int32_t *value)
{
    uint32_t raw;
    nxe_status status = nxe_read_u32(r, &raw);
    if (status == NXE_OK)
        memcpy(value, &raw, sizeof raw);
    return status;
}

nxe_status nxe_read_u64(nxe_reader *r, uint64_t *value)
{
    const uint8_t *p;
    nxe_status status = nxe_read_bytes(r, 8, &p);
    if (status == NXE_OK)
        *value = nxe_load_u64(p);
    return status;
}

nxe_status nxe_read_i64(nxe_reader *r, int64_t *value)
{
    uint64_t raw;
    nxe_status status = nxe_read_u64(r, &raw);
    if (status == NXE_OK)
        memcpy(value, &raw, sizeof raw);
    return status;
}

nxe_status nxe_read_f32(nxe_reader *r, float *value)
{
    uint32_t raw;
    nxe_status status = nxe_read_u32(r, &raw);
    if (status == NXE_OK)
        memcpy(value, &raw, sizeof raw);
    return status;
}

nxe_status nxe_read_f64(nxe_reader *r, double *value)
{
    uint64_t raw;
    nxe_status status = nxe_read_u64(r, &raw);
    if (status == NXE_OK)
        memcpy(value, &raw, sizeof raw);
    return status;
}

nxe_status nxe_read_string(nxe_reader *r, uint32_t max_length, char **value)
{
    *value = NULL;
    uint32_t length;
    nxe_status status = nxe_read_u32(r, &length);
    if (status != NXE_OK)
        return status;
    if (length > max_length)
        return nxe_reader_error(r, "string of %u bytes exceeds the limit of %u", length,
                                max_length);
    const uint8_t *bytes;
    status = nxe_read_bytes(r, length, &bytes);
    if (status != NXE_OK)
        return status;
    if (memchr(bytes, 0, length))
        return nxe_reader_error(r, "string contains a NUL byte");
    char *copy = nxe_alloc((size_t)length + 1);
    if (!copy)
        return nxe_error(NXE_ERROR_OUT_OF_MEMORY, "%s: out of memory", r->what);
    memcpy(copy, bytes, length);
    copy[length] = '\0';
    *value = copy;
    return NXE_OK;
}

nxe_status nxe_read_count(nxe_reader *r, uint32_t max_count, size_t min_item_size, uint32_t *count)
{
    nxe_status status = nxe_read_u32(r, count);
    if (status != NXE_OK)
        return status;
    size_t left = r->size - r->pos;
    if (*count > max_count || (min_item_size > 0 && *count > left / min_item_size))
        return nxe_reader_error(r,
                                "count %u is larger than the limit %u or than %zu remaining "
                                "bytes can hold",
                                *count, max_count, left);
    return NXE_OK;
}

nxe_status nxe_reader_expect_end(const nxe_reader *r)
{
    if (r->pos != r->size)
        return nxe_reader_error(r, "%zu unexpected trailing bytes", r->size - r->pos);
    return NXE_OK;
}

/* ---- writer ---- */

nxe_writer nxe_writer_make(void *data, size_t capacity)
{
    return (nxe_writer){.data = data, .capacity = capacity, .size = 0};
}

void nxe_write_bytes(nxe_writer *w, const void *bytes, size_t size)
{
    if (w->data && size && w->size + size <= w->capacity)
        memcpy(w->data + w->size, bytes, size);
    w->size += size;
}

void nxe_write_zeros(nxe_writer *w, size_t size)
{
    if (w->data && size && w->size + size <= w->capacity)
        memset(w->data + w->size, 0, size);
    w->size += size;
}

void nxe_write_u8(nxe_writer *w, uint8_t value)
{
    nxe_write_bytes(w, &value, 1);
}

void nxe_write_u32(nxe_writer *w, uint32_t value)
{
    uint8_t bytes[4];
    nxe_store_u32(bytes, value);
    nxe_write_bytes(w, bytes, 4);
}

void nxe_write_i32(nxe_writer *w, int32_t value)
{
    uint32_t raw;
    memcpy(&raw, &value, sizeof raw);
    nxe_write_u32(w, raw);
}

void nxe_write_u64(nxe_writer *w, uint64_t value)
{
    uint8_t bytes[8];
    nxe_store_u64(bytes, value);
    nxe_write_bytes(w, bytes, 8);
}

void nxe_write_i64(nxe_writer *w, int64_t value)
{
    uint64_t raw;
    memcpy(&raw, &value, sizeof raw);
    nxe_write_u64(w, raw);
}

void nxe_write_f32(nxe_writer *w, float value)
{
    uint32_t raw;
    memcpy(&raw, &value, sizeof raw);
    nxe_write_u32(w, raw);
}

void nxe_write_f64(nxe_writer *w, double value)
{
    uint64_t raw;
    memcpy(&raw, &value, sizeof raw);
    nxe_write_u64(w, raw);
}

void nxe_write_string(nxe_writer *w, const char *value)
{
    size_t length = strlen(value);
    nxe_write_u32(w, (uint32_t)length);
    nxe_write_bytes(w, value, length);
}
