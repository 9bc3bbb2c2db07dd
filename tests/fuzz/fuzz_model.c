/* fuzz_model.c — libFuzzer harness over the model-file reader: any bytes must open cleanly or
 * fail with a status and a message; whatever opens is read back, rebuilt, saved again and
 * must keep its fingerprint. Each input is tried as is and with its checksums made
 * consistent, so mutations reach the section parsers. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nxe/nxe.h>

#include "model/model.h"
#include "rechecksum.h"

#define REQUIRE(cond)                                                                              \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_model: %s failed: %s\n", #cond, nxe_last_error());               \
            __builtin_trap();                                                                      \
        }                                                                                          \
    } while (0)

/* A graph rebuilt from a model saves to a model with the same fingerprint. */
static void check_round_trip(const nxe_model *model, nxe_graph *graph)
{
    const char *json;
    size_t json_size;
    REQUIRE(nxe_model_metadata(model, &json, &json_size) == NXE_OK);
    char *metadata = malloc(json_size + 1);
    REQUIRE(metadata != NULL);
    memcpy(metadata, json, json_size);
    metadata[json_size] = '\0';
    uint8_t original[32], again[32];
    REQUIRE(nxe_model_fingerprint(model, original) == NXE_OK);
    nxe_model_write_options options = NXE_MODEL_WRITE_OPTIONS_INIT;
    options.metadata_json = metadata;
    size_t size = 0;
    REQUIRE(nxe_graph_save_model(graph, &options, NULL, &size) == NXE_OK);
    uint8_t *file = malloc(size);
    REQUIRE(file != NULL);
    REQUIRE(nxe_graph_save_model(graph, &options, file, &size) == NXE_OK);
    nxe_model *reopened = NULL;
    REQUIRE(nxe_model_open_memory(file, size, NULL, &reopened) == NXE_OK);
    REQUIRE(nxe_model_fingerprint(reopened, again) == NXE_OK);
    REQUIRE(memcmp(original, again, sizeof original) == 0);
    nxe_model_release(reopened);
    free(file);
    free(metadata);
}

static void exercise(const nxe_model *model, int lazy)
{
    uint8_t fingerprint[32];
    const char *json;
    size_t json_size;
    int32_t count = 0;
    nxe_model_fingerprint(model, fingerprint);
    nxe_model_metadata(model, &json, &json_size);
    nxe_model_annotations(model, &json, &json_size);
    nxe_model_tensor_count(model, &count);
    for (int32_t i = 0; i < count; i++) {
        nxe_tensor_info info = {.struct_size = sizeof info};
        nxe_tensor_desc desc;
        if (nxe_model_tensor(model, i, &info, &desc) == NXE_OK && desc.data_size > 0) {
            /* touch the first and last byte: they must lie inside the model */
            volatile uint8_t sink = ((const uint8_t *)desc.data)[0];
            sink = ((const uint8_t *)desc.data)[desc.data_size - 1];
            (void)sink;
        }
    }
    nxe_context *ctx = NULL;
    nxe_graph *graph = NULL;
    if (nxe_context_create(&ctx) == NXE_OK && nxe_model_build_graph(model, ctx, &graph) == NXE_OK) {
        if (!lazy)
            check_round_trip(model, graph);
        nxe_graph_release(graph);
    }
    nxe_context_release(ctx);
}

static void open_and_exercise(const uint8_t *data, size_t size)
{
    for (int lazy = 0; lazy <= 1; lazy++) {
        nxe_model_options options = NXE_MODEL_OPTIONS_INIT;
        options.lazy = lazy;
        nxe_model *model = NULL;
        nxe_status status = nxe_model_open_memory(data, size, &options, &model);
        if (status == NXE_OK) {
            exercise(model, lazy);
            nxe_model_verify(model);
            nxe_model_release(model);
        } else if (model != NULL || nxe_last_error()[0] == '\0') {
            fprintf(stderr, "failed open left an out-param or no message\n");
            __builtin_trap();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    open_and_exercise(data, size);
    uint8_t *consistent = rechecksummed_copy(data, size);
    if (consistent) {
        open_and_exercise(consistent, size);
        free(consistent);
    }
    return 0;
}
