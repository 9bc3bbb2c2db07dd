/* quantized.c — reference kernels for the quantized op family. */
#include "quantized.h"

typedef int nxe_ref_quantized_placeholder;
