/* binary_loader.c — placeholder; filled in by its owner. */
#include "runtime/executable_internal.h"
