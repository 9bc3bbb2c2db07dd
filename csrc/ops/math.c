/* math.c — op family placeholder; filled in by its owner. */
#include "ops/op_def.h"

const nxe_op_family nxe_ops_math = {NULL, 0};
