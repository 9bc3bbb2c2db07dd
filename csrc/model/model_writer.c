/* model_writer.c — placeholder; filled in by its owner. */
#include "model/container.h"
