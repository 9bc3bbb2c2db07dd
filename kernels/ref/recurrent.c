/* recurrent.c — reference kernels for the recurrent op family. */
#include "recurrent.h"

typedef int nxe_ref_recurrent_placeholder;
