/* depth_to_space.c — pixel shuffle of 32-bit elements in channels-first layout, the step after
 * every sub-pixel super-resolution network: each output row interleaves `block` input rows.
 * Same contract and row split as nxe_ref_xN_depth_to_space (kernels/ref/conv.h), without its
 * per-element index arithmetic. Portable C built once per ISA level (see portable.h). */
#include "portable/portable.h"

void NXE_ISA_NAME(nxe_x32_depth_to_space)(const nxe_depth_to_space_geometry *g,
                                          const uint32_t *input, uint32_t *output,
                                          int64_t row_begin, int64_t row_end)
{
    const int64_t block = g->block_size;
    const int64_t out_channels = g->in_channels / (block * block);
    const int64_t out_height = g->in_height * block, out_width = g->in_width * block;
    const int64_t width = g->in_width;
    for (int64_t row = row_begin; row < row_end; row++) {
        const int64_t n = row / out_height, oy = row % out_height;
        const int64_t iy = oy / block, i = oy % block;
        for (int64_t c = 0; c < out_channels; c++) {
            uint32_t *dst = output + ((n * out_channels + c) * out_height + oy) * out_width;
            for (int64_t j = 0; j < block; j++) {
                const int64_t ic =
                    g->crd_mode ? (c * block + i) * block + j : (i * block + j) * out_channels + c;
                const uint32_t *src =
                    input + ((n * g->in_channels + ic) * g->in_height + iy) * width;
                for (int64_t x = 0; x < width; x++)
                    dst[x * block + j] = src[x];
            }
        }
    }
}
