/* version.c — what version of the ABI and library the host actually loaded. */
#include "core/core.h"

/* nxe.h is the one place the version is written; the build reads it from there too. */
#define NXE_STRINGIFY(x) #x
#define NXE_NUMBER_TEXT(x) NXE_STRINGIFY(x)

NXE_API uint32_t nxe_api_version(void)
{
    return ((uint32_t)NXE_API_VERSION_MAJOR << 16) | (uint32_t)NXE_API_VERSION_MINOR;
}

NXE_API const char *nxe_version_string(void)
{
    return NXE_NUMBER_TEXT(NXE_API_VERSION_MAJOR) "." NXE_NUMBER_TEXT(
        NXE_API_VERSION_MINOR) "." NXE_NUMBER_TEXT(NXE_VERSION_PATCH);
}
