/* pool.h — reference kernels for the pool op family (portable C11, the oracle for all others). */
#ifndef NXE_KERNELS_REF_POOL_H
#define NXE_KERNELS_REF_POOL_H

#include <stddef.h>
#include <stdint.h>

#endif
