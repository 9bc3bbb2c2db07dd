/* version.c — what version of the ABI and library the host actually loaded. */
#include "core/core.h"

/* The build passes the project version from meson.build, the one place it is written. */
#ifndef NXE_VERSION_STRING
#error "NXE_VERSION_STRING must be defined by the build"
#endif

NXE_API uint32_t nxe_api_version(void)
{
    return ((uint32_t)NXE_API_VERSION_MAJOR << 16) | (uint32_t)NXE_API_VERSION_MINOR;
}

NXE_API const char *nxe_version_string(void)
{
    return NXE_VERSION_STRING;
}
