/* recurrent.h — reference kernels for the recurrent op family (portable C11, the oracle for all others). */
#ifndef NXE_KERNELS_REF_RECURRENT_H
#define NXE_KERNELS_REF_RECURRENT_H

#include <stddef.h>
#include <stdint.h>

#endif
