/* pool.c — reference kernels for the pool op family. */
#include "pool.h"

typedef int nxe_ref_pool_placeholder;
