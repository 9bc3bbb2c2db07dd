/* binary_writer.c — placeholder; filled in by its owner. */
#include "runtime/executable_internal.h"
