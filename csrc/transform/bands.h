/* bands.h — depth-first runs of convolution stacks over a prepared plan (bands.c). */
#ifndef NXE_BANDS_H
#define NXE_BANDS_H

#include "transform/plan.h"

/* Marks chains of consecutive steps that can run band by band: each step has a band shape
 * (nxe_op_band_shape_fn) and reads the previous one's output as its input 0. A run then
 * computes a band of the last step's output rows at a time, each step first adding the rows
 * the next one needs, so the rows one step writes are read by the next while still in cache.
 * Every row is computed once, by the same code as a whole run: the results are the same bit
 * for bit. Only with NXE_DEPTH_FIRST=on in the environment, read at every prepare: on the CPUs
 * measured so far band runs do not yet beat layer-by-layer runs (docs/architecture.md). */
void nxe_plan_bands(nxe_exe_step *steps, int32_t num_steps);

/* Most steps in one chain; a longer stack runs as several chains. */
#define NXE_BAND_MAX_STEPS 8

/* The step after chain_head's chain's last: lifetimes of tensors its steps touch extend to
 * it - 1 (memory planning), as a band run interleaves the steps. */
int32_t nxe_band_chain_end(const nxe_exe_step *steps, int32_t chain_head);

#endif
