/* graph_codec.c — placeholder; filled in by its owner. */
#include "model/container.h"
