/* relayout.h — runs the layout pass (transform/layout.c) over an executable's plan. */
#ifndef NXE_RELAYOUT_H
#define NXE_RELAYOUT_H

#include "runtime/executable_internal.h"

/* Runs nxe_layout_pass over exe's plan (tensors laid out, steps not prepared) and takes back
 * the arrays and counts it rewrote. Statuses as nxe_layout_pass; on failure exe is only fit to
 * be released. */
nxe_status nxe_executable_relayout(nxe_executable *exe);

#endif
