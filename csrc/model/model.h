/* model.h — internal entry points of the model-file code for the rest of the library:
 * the canonical fingerprint of a graph, as the model file it would be saved as. */
#ifndef NXE_MODEL_H
#define NXE_MODEL_H

#include "core/core.h"

/* SHA-256 fingerprint of `graph` saved with `metadata_json` (NULL = "{}"): equal to the
 * fingerprint nxe_model_fingerprint reports for that file. A graph built from a model file
 * reports that file's fingerprint instead (nxe_graph.source_fingerprint). */
nxe_status nxe_graph_fingerprint(nxe_graph *graph, const char *metadata_json,
                                 uint8_t fingerprint[32]);

#endif
