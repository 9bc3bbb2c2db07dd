/* file_map.c — maps model and binary files read-only so weights are used in place. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/file_map.h"

nxe_status nxe_file_map_open(const char *path, nxe_file_map *map)
{
    *map = (nxe_file_map){0};
    if (!path)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "file path is NULL");
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return nxe_error(NXE_ERROR_IO, "cannot open '%s': %s", path, strerror(errno));
    struct stat info;
    if (fstat(fd, &info) != 0) {
        int saved = errno;
        close(fd);
        return nxe_error(NXE_ERROR_IO, "cannot stat '%s': %s", path, strerror(saved));
    }
    if (!S_ISREG(info.st_mode)) {
        close(fd);
        return nxe_error(NXE_ERROR_IO, "'%s' is not a regular file", path);
    }
    if (info.st_size <= 0) {
        close(fd);
        return nxe_error(NXE_ERROR_FORMAT, "'%s' is empty", path);
    }
    if ((uint64_t)info.st_size > SIZE_MAX) {
        close(fd);
        return nxe_error(NXE_ERROR_IO, "'%s' is too large to map", path);
    }
    size_t size = (size_t)info.st_size;
    void *data = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    int saved = errno;
    close(fd);
    if (data == MAP_FAILED)
        return nxe_error(NXE_ERROR_IO, "cannot map '%s': %s", path, strerror(saved));
    map->data = data;
    map->size = size;
    map->mapped = true;
    return NXE_OK;
}

void nxe_file_map_release(nxe_file_map *map)
{
    if (map->data && map->mapped)
        munmap((void *)map->data, map->size);
    else
        nxe_free((void *)map->data);
    *map = (nxe_file_map){0};
}
