/* resize.h — reference kernels for the resize op family (portable C11, the oracle for all others). */
#ifndef NXE_KERNELS_REF_RESIZE_H
#define NXE_KERNELS_REF_RESIZE_H

#include <stddef.h>
#include <stdint.h>

#endif
