/* variable_writes.h — updates of VARIABLE tensors in a plan go through a temporary and an
 * Assign step (variable_writes.c). */
#ifndef NXE_VARIABLE_WRITES_H
#define NXE_VARIABLE_WRITES_H

#include "runtime/executable_internal.h"

/* Redirects every step that writes a VARIABLE which it or an earlier step reads into a new
 * TRANSIENT tensor and inserts an Assign step right after it that copies the result into the
 * variable. Grows the executable's tensors and steps; called before the arena is planned.
 * NXE_ERROR_OUT_OF_MEMORY, NXE_ERROR_INTERNAL; the executable is then only fit for release. */
nxe_status nxe_executable_stage_variable_writes(nxe_executable *exe);

#endif
