/* math.h — reference kernels for the math op family (portable C11, the oracle for all others). */
#ifndef NXE_KERNELS_REF_MATH_H
#define NXE_KERNELS_REF_MATH_H

#include <stddef.h>
#include <stdint.h>

#endif
