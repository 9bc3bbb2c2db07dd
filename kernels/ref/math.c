/* math.c — reference kernels for the math op family. */
#include "math.h"

typedef int nxe_ref_math_placeholder;
