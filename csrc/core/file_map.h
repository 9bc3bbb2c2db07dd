/* file_map.h — read-only whole-file mappings (mmap where available, a read otherwise). */
#ifndef NXE_FILE_MAP_H
#define NXE_FILE_MAP_H

#include "core/core.h"

typedef struct nxe_file_map {
    const uint8_t *data;
    size_t size;
    bool mapped; /* true: munmap on release; false: nxe_free */
} nxe_file_map;

/* Maps `path` read-only. Fails with NXE_ERROR_IO naming the path and the system's reason. */
nxe_status nxe_file_map_open(const char *path, nxe_file_map *map);
void nxe_file_map_release(nxe_file_map *map);

#endif
