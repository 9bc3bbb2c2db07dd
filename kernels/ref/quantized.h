/* quantized.h — reference kernels for the quantized op family (portable C11, the oracle for all others). */
#ifndef NXE_KERNELS_REF_QUANTIZED_H
#define NXE_KERNELS_REF_QUANTIZED_H

#include <stddef.h>
#include <stdint.h>

#endif
