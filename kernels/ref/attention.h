/* attention.h — reference kernels for the attention op family (portable C11, the oracle for all others). */
#ifndef NXE_KERNELS_REF_ATTENTION_H
#define NXE_KERNELS_REF_ATTENTION_H

#include <stddef.h>
#include <stdint.h>

#endif
