/* fold_epilogues.h — the epilogue-folding pass over a prepared plan (fold_epilogues.c). */
#ifndef NXE_FOLD_EPILOGUES_H
#define NXE_FOLD_EPILOGUES_H

#include "transform/plan.h"

/* Folds each activation (an op with an as_activation hook), product by a constant f32 scalar
 * (before any activation or residual) and residual Add of the same shape into the prepared f32
 * step before it, when it is that step's only reader; folded steps are cleared and the rest
 * moved up, so *num_steps may shrink. The tensor a fold bypasses leaves the arena. */
nxe_status nxe_fold_epilogues(nxe_exe_tensor *tensors, int32_t num_tensors, nxe_exe_step *steps,
                              int32_t *num_steps);

#endif
