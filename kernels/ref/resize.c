/* resize.c — reference kernels for the resize op family. */
#include "resize.h"

typedef int nxe_ref_resize_placeholder;
