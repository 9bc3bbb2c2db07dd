/* bands.c — depth-first runs of convolution stacks: which consecutive steps run band by band,
 * and how tall a band is. The run itself is in runtime/executable.c (run_chain). */
#include <stdlib.h>
#include <string.h>

#include "transform/bands.h"

/* A band's rows, across the chain's outputs, hold about this many bytes: far below the
 * last-level cache, so that a step reads the rows the previous one wrote before they are
 * evicted, and large enough that each step's part of a band still splits across threads. */
#define BAND_BYTES ((int64_t)1 << 20)
/* Fewer rows than this per band cost more in per-step overhead than they save. */
#define BAND_MIN_ROWS 4

static bool band_shape_of(nxe_exe_step *step)
{
    const nxe_op_def *def = step->node.def;
    if (!step->prepared || !def->band_shape || !def->run_rows || step->num_outputs < 1 ||
        step->num_inputs < 1 || !def->band_shape(step->params, step->prepared, &step->band))
        return false;
    return step->band.rows > 0 && step->band.halo_top >= 0 && step->band.halo_bottom >= 0 &&
           step->band.row_unit >= 1;
}

/* Whether `next` reads `step`'s output as its input 0, a whole image of it. */
static bool feeds(const nxe_exe_step *step, const nxe_exe_step *next)
{
    return next->input_ids[0] >= 0 && next->input_ids[0] == step->output_ids[0];
}

static int64_t round_up(int64_t value, int64_t unit)
{
    return (value + unit - 1) / unit * unit;
}

void nxe_plan_bands(nxe_exe_step *steps, int32_t num_steps)
{
    for (int32_t s = 0; s < num_steps; s++)
        steps[s].band_steps = 0;
    const char *mode = getenv("NXE_DEPTH_FIRST");
    if (!mode || (strcmp(mode, "on") != 0 && strcmp(mode, "1") != 0))
        return;
    for (int32_t head = 0; head < num_steps;) {
        int32_t end = head;
        while (end < num_steps && end - head < NXE_BAND_MAX_STEPS && band_shape_of(&steps[end]) &&
               (end == head || feeds(&steps[end - 1], &steps[end])))
            end++;
        if (end - head < 2) {
            head = end > head ? end : head + 1;
            continue;
        }
        int64_t row_bytes = 0, unit = 1;
        for (int32_t s = head; s < end; s++) {
            row_bytes += steps[s].band.row_bytes;
            if (steps[s].band.row_unit > unit)
                unit = steps[s].band.row_unit; /* units are 1 or 4 */
        }
        int64_t rows = row_bytes > 0 ? BAND_BYTES / row_bytes : steps[end - 1].band.rows;
        rows = round_up(rows < BAND_MIN_ROWS ? BAND_MIN_ROWS : rows, unit);
        /* A chain one band tall gains nothing. */
        if (rows < steps[end - 1].band.rows) {
            steps[head].band_steps = end - head;
            steps[head].band_rows = rows;
        }
        head = end;
    }
}

int32_t nxe_band_chain_end(const nxe_exe_step *steps, int32_t chain_head)
{
    return chain_head + steps[chain_head].band_steps;
}
