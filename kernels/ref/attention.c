/* attention.c — reference kernels for the attention op family. */
#include "attention.h"

typedef int nxe_ref_attention_placeholder;
