/* model_reader.c — placeholder; filled in by its owner. */
#include "model/container.h"
