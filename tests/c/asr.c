/* asr.c — the engine's built-in "asr" kind from C: bad arguments and bad files.
 *
 * Every engine has the kind: a model of kind "asr" is accepted; a file that is not a model
 * (garbage bytes) or a missing file fails the request with the load's status and a message
 * naming the file, and the engine goes on serving; the progress functions refuse NULL
 * arguments. When NXE_TEST_ASR_MODEL names a baked Whisper model, requests run on it too: an
 * empty input gives empty text and no segments, one second of silence empty text, and bad
 * inputs and options fail alone with NXE_ERROR_INVALID_ARGUMENT naming what was wrong. Run
 * under ASan/LSan and TSan in CI. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nxe/nxe_engine.h>

static int checks;
static int failures;

static void check(bool ok, const char *what, int line)
{
    checks++;
    if (!ok) {
        fprintf(stderr, "asr.c:%d: %s (last error: \"%s\")\n", line, what, nxe_last_error());
        failures++;
    }
}
#define CHECK(cond) check((cond), #cond, __LINE__)
#define CHECK_OK(call) check((call) == NXE_OK, #call, __LINE__)

/* Submits `samples` f32 samples (NULL: an f64 input of one sample) with `options`, waits, and
 * returns the request (the caller releases it). */
static nxe_engine_request *transcribe(nxe_engine *engine, const char *model, const float *samples,
                                      int64_t count, const nxe_engine_option *options,
                                      int32_t num_options)
{
    static const double one_double = 0.0;
    static const float none = 0.0f;
    nxe_engine_io input = {"pcm",
                           {samples ? (void *)samples : (void *)&one_double,
                            samples ? sizeof(float) * (size_t)count : sizeof one_double,
                            1,
                            NXE_DL_FLOAT,
                            samples ? 32 : 64,
                            0,
                            {samples ? count : 1}}};
    if (samples && count == 0)
        input.tensor.data = (void *)&none;
    nxe_engine_submit_options submit = NXE_ENGINE_SUBMIT_OPTIONS_INIT;
    submit.options = options;
    submit.num_options = num_options;
    nxe_engine_request *request = NULL;
    CHECK_OK(nxe_engine_submit(engine, model, &input, 1, &submit, &request));
    if (request)
        CHECK_OK(nxe_engine_request_wait(request, 600.0));
    return request;
}

/* The UTF-8 output `name` of a finished request, NUL-terminated into `out`. */
static bool output_text(const nxe_engine_request *request, const char *name, char *out, size_t size)
{
    int32_t count = 0;
    out[0] = '\0';
    if (nxe_engine_request_output_count(request, &count) != NXE_OK)
        return false;
    for (int32_t i = 0; i < count; i++) {
        nxe_engine_io io;
        if (nxe_engine_request_output(request, i, &io) != NXE_OK || strcmp(io.name, name) != 0)
            continue;
        size_t n = (size_t)io.tensor.shape[0] < size - 1 ? (size_t)io.tensor.shape[0] : size - 1;
        memcpy(out, io.tensor.data, n);
        out[n] = '\0';
        return true;
    }
    return false;
}

static void with_model(nxe_engine *engine, const char *path)
{
    nxe_engine_model_spec spec = NXE_ENGINE_MODEL_SPEC_INIT;
    spec.name = "whisper";
    spec.kind = "asr";
    spec.path = path;
    CHECK_OK(nxe_engine_add_model(engine, &spec));
    char text[4096];

    nxe_engine_request *request = transcribe(engine, "whisper", (const float[]){0}, 0, NULL, 0);
    CHECK(nxe_engine_request_status(request) == NXE_OK);
    CHECK(output_text(request, "text", text, sizeof text) && text[0] == '\0');
    CHECK(output_text(request, "segments", text, sizeof text) && strcmp(text, "[]") == 0);
    double progress = 0;
    CHECK_OK(nxe_engine_request_progress(request, &progress));
    CHECK(progress == 1.0);
    nxe_engine_request_release(request);

    float *silence = calloc(16000, sizeof *silence);
    request = transcribe(engine, "whisper", silence, 16000, NULL, 0);
    CHECK(nxe_engine_request_status(request) == NXE_OK);
    CHECK(output_text(request, "text", text, sizeof text) && text[0] == '\0');
    nxe_engine_request_release(request);

    request = transcribe(engine, "whisper", NULL, 1, NULL, 0);
    CHECK(nxe_engine_request_status(request) == NXE_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(nxe_engine_request_error(request), "pcm") != NULL);
    nxe_engine_request_release(request);

    static const struct {
        nxe_engine_option option;
        const char *named;
    } bad[] = {{{"language", "xx"}, "language"},
               {{"sample_rate", "44100"}, "sample_rate"},
               {{"beam_size", "-2"}, "beam_size"},
               {{"temperature", "0,x"}, "temperature"},
               {{"task", "guess"}, "task"},
               {{"patience", "nan"}, "patience"},
               {{"logprob_threshold", ""}, "logprob"},
               {{"seed", "-1"}, "seed"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        request = transcribe(engine, "whisper", silence, 16000, &bad[i].option, 1);
        CHECK(nxe_engine_request_status(request) == NXE_ERROR_INVALID_ARGUMENT);
        CHECK(strstr(nxe_engine_request_error(request), bad[i].named) != NULL);
        nxe_engine_request_release(request);
    }
    free(silence);
}

int main(void)
{
    nxe_engine *engine = NULL;
    CHECK_OK(nxe_engine_create(NULL, &engine));
    if (!engine)
        return 1;

    /* The progress functions' bad arguments. */
    double fraction = 5.0;
    CHECK(nxe_engine_request_progress(NULL, &fraction) == NXE_ERROR_INVALID_ARGUMENT);
    CHECK(fraction == 0.0);
    CHECK(nxe_engine_batch_set_progress(NULL, 0, 0.5) == NXE_ERROR_INVALID_ARGUMENT);

    /* A file that is not a model, and one that does not exist. */
    char dir[] = "/tmp/nxe-asr-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char garbage[64], missing[64];
    snprintf(garbage, sizeof garbage, "%s/garbage.nxm", dir);
    snprintf(missing, sizeof missing, "%s/missing.nxm", dir);
    FILE *f = fopen(garbage, "wb");
    CHECK(f != NULL);
    if (f) {
        for (int i = 0; i < 4096; i++)
            fputc((i * 131 + 7) & 0xff, f);
        fclose(f);
    }
    const char *paths[2] = {garbage, missing};
    const char *names[2] = {"garbage", "missing"};
    for (int i = 0; i < 2; i++) {
        nxe_engine_model_spec spec = NXE_ENGINE_MODEL_SPEC_INIT;
        spec.name = names[i];
        spec.kind = "asr";
        spec.path = paths[i];
        CHECK_OK(nxe_engine_add_model(engine, &spec));
        float samples[160] = {0};
        nxe_engine_request *request = transcribe(engine, names[i], samples, 160, NULL, 0);
        CHECK(nxe_engine_request_status(request) != NXE_OK);
        CHECK(strstr(nxe_engine_request_error(request), paths[i]) != NULL);
        double progress = 1.0;
        CHECK_OK(nxe_engine_request_progress(request, &progress));
        CHECK(progress == 0.0);
        nxe_engine_request_release(request);
    }
    remove(garbage);
    rmdir(dir);

    const char *model = getenv("NXE_TEST_ASR_MODEL");
    if (model && model[0])
        with_model(engine, model);
    else
        printf("asr.c: NXE_TEST_ASR_MODEL not set: the requests on a real model were not run\n");

    nxe_engine_release(engine);
    printf("asr.c: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
