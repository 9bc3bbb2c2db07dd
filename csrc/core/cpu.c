/* cpu.c — the public CPU calls: what kernel dispatch (kernels/dispatch.c) found about this
 * process's CPU and the kernels it chose, reported through the ABI. */
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "dispatch.h"

_Static_assert(sizeof((nxe_cpu_detection *)0)->reason == sizeof((nxe_cpu_info *)0)->reason,
               "the reason is copied whole into nxe_cpu_info");

NXE_API nxe_status nxe_cpu_info_get(nxe_cpu_info *info)
{
    const char *where = "nxe_cpu_info_get";
    if (!info)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "%s: info is NULL", where);
    if (info->struct_size < sizeof(nxe_cpu_info))
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "%s: info.struct_size is %u, expected at least %zu", where,
                         info->struct_size, sizeof(nxe_cpu_info));
    const nxe_cpu_detection *d = nxe_cpu_detect();
    uint32_t struct_size = info->struct_size;
    *info = (nxe_cpu_info){.struct_size = struct_size, .features = d->features};
    snprintf(info->isa, sizeof info->isa, "%s", nxe_isa_level_name(d->level));
    memcpy(info->reason, d->reason, sizeof info->reason);
    return NXE_OK;
}

NXE_API nxe_status nxe_cpu_kernels(const char **names)
{
    if (!names)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT, "nxe_cpu_kernels: names is NULL");
    *names = nxe_cpu_detect()->kernel_names;
    return NXE_OK;
}
