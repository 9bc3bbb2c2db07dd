/* audio.c — the audio frontend from C: nxe_audio_log10_mel against a direct DFT computed here in
 * double (the padding, window and mel sums as nxe_audio.h defines them) for several frame
 * lengths (radix 2, 3, 4, 5 and other primes, odd and even), windows of frames against the whole,
 * four threads at once (each answer equal to the single-threaded one), Whisper's scaling against
 * its formula, then bad arguments: each refused with NXE_ERROR_INVALID_ARGUMENT, the output
 * untouched. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nxe/nxe_audio.h>

static int failures;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "audio.c:%d: %s failed (last error: %s)\n", __LINE__, #cond,           \
                    nxe_last_error());                                                             \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* log10 units. The library's float32 FFT rounds each bin's power by about 1e-6 of the frame's
 * energy; the filters below weigh every bin, so each mel value is within ~1e-6 relative of the
 * exact one, 5e-7 in log10 (measured: under 9e-7 for every length below). */
#define TOLERANCE 1e-5

static const double two_pi = 6.283185307179586476925286766559;

static unsigned long long lcg_state = 12345;
static double uniform(void) /* in [-1, 1) */
{
    lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(lcg_state >> 11) / 4503599627370496.0 - 1.0;
}

/* Sample i of the signal as the library reads it: zeros past the end, reflection before 0. */
static double padded(const float *x, long long n, long long i)
{
    if (i < 0)
        i = -i;
    return i < n ? x[i] : 0.0;
}

/* log10(max(sum_k filters[m][k] |X_f[k]|^2, 1e-10)) by the direct DFT, into expected[m][frames]. */
static void direct_log10_mel(const nxe_mel_spec *spec, const float *x, long long n, long long first,
                             long long frames, double *expected)
{
    const int n_fft = spec->n_fft, bins = n_fft / 2 + 1;
    double *cosines = malloc(sizeof(double) * n_fft), *sines = malloc(sizeof(double) * n_fft);
    double *frame = malloc(sizeof(double) * n_fft), *power = malloc(sizeof(double) * bins);
    for (int j = 0; j < n_fft; j++) {
        cosines[j] = cos(two_pi * j / n_fft);
        sines[j] = sin(two_pi * j / n_fft);
    }
    for (long long f = 0; f < frames; f++) {
        long long start = (first + f) * spec->hop_length - n_fft / 2;
        for (int j = 0; j < n_fft; j++)
            frame[j] = padded(x, n, start + j) * (0.5 - 0.5 * cosines[j]);
        for (int k = 0; k < bins; k++) {
            double re = 0, im = 0;
            for (int j = 0; j < n_fft; j++) {
                int r = (int)(((long long)j * k) % n_fft);
                re += frame[j] * cosines[r];
                im -= frame[j] * sines[r];
            }
            power[k] = re * re + im * im;
        }
        for (int m = 0; m < spec->n_mels; m++) {
            double sum = 0;
            for (int k = 0; k < bins; k++)
                sum += spec->filters[m * bins + k] * power[k];
            expected[m * frames + f] = log10(sum > 1e-10 ? sum : 1e-10);
        }
    }
    free(cosines);
    free(sines);
    free(frame);
    free(power);
}

static void check_against_direct_dft(int n_fft, int hop, int n_mels, long long n)
{
    const int bins = n_fft / 2 + 1;
    float *filters = malloc(sizeof(float) * n_mels * bins);
    float *x = malloc(sizeof(float) * (n > 0 ? n : 1));
    for (int i = 0; i < n_mels * bins; i++)
        filters[i] = (float)(0.5 + 0.5 * uniform());
    for (long long i = 0; i < n; i++)
        x[i] = (float)(0.3 * uniform() + 0.4 * sin(two_pi * 0.05 * i));
    nxe_mel_spec spec = {sizeof(nxe_mel_spec), n_fft, hop, n_mels, filters};
    const long long frames = n / hop + 2;
    float *out = malloc(sizeof(float) * n_mels * frames), max_value = 0;
    double *expected = malloc(sizeof(double) * n_mels * frames);
    CHECK(nxe_audio_log10_mel(&spec, x, n, 0, frames, out, &max_value) == NXE_OK);
    direct_log10_mel(&spec, x, n, 0, frames, expected);
    double worst = 0;
    float largest = -INFINITY;
    for (long long i = 0; i < n_mels * frames; i++) {
        double error = fabs(out[i] - expected[i]);
        worst = error > worst ? error : worst;
        largest = out[i] > largest ? out[i] : largest;
    }
    if (worst > TOLERANCE)
        fprintf(stderr, "n_fft %d hop %d: largest error %g\n", n_fft, hop, worst);
    CHECK(worst <= TOLERANCE);
    CHECK(max_value == largest);

    /* A window of the frames equals those columns of the whole. */
    const long long first = frames / 3, count = frames - first;
    float *window = malloc(sizeof(float) * n_mels * count), window_max = 0;
    CHECK(nxe_audio_log10_mel(&spec, x, n, first, count, window, &window_max) == NXE_OK);
    int same = 1;
    for (int m = 0; m < n_mels; m++)
        same &= memcmp(window + m * count, out + m * frames + first, sizeof(float) * count) == 0;
    CHECK(same);
    CHECK(window_max <= max_value);
    free(window);
    free(filters);
    free(x);
    free(out);
    free(expected);
}

/* Four threads computing the same 30 s spectrogram at once; the functions keep no state. */
enum { THREADS = 4, THREAD_SAMPLES = 16000 * 30, THREAD_FRAMES = 3000 };
static float thread_samples[THREAD_SAMPLES];
static float thread_filters[80 * 201];
static float thread_out[THREADS + 1][80 * THREAD_FRAMES];

static void *thread_spectrogram(void *arg)
{
    float *out = arg, max_value;
    nxe_mel_spec spec = {sizeof(nxe_mel_spec), 400, 160, 80, thread_filters};
    if (nxe_audio_log10_mel(&spec, thread_samples, THREAD_SAMPLES, 0, THREAD_FRAMES, out,
                            &max_value) != NXE_OK ||
        nxe_audio_whisper_scale(out, 80 * THREAD_FRAMES, max_value) != NXE_OK)
        out[0] = NAN;
    return NULL;
}

static void check_threads(void)
{
    for (int i = 0; i < THREAD_SAMPLES; i++)
        thread_samples[i] = (float)(0.3 * uniform());
    for (int i = 0; i < 80 * 201; i++)
        thread_filters[i] = (float)(0.5 + 0.5 * uniform());
    thread_spectrogram(thread_out[THREADS]);
    pthread_t threads[THREADS];
    for (int t = 0; t < THREADS; t++)
        CHECK(pthread_create(&threads[t], NULL, thread_spectrogram, thread_out[t]) == 0);
    for (int t = 0; t < THREADS; t++) {
        pthread_join(threads[t], NULL);
        CHECK(memcmp(thread_out[t], thread_out[THREADS], sizeof thread_out[t]) == 0);
    }
}

static void check_whisper_scale(void)
{
    float values[1000], expected[1000];
    for (int i = 0; i < 1000; i++) {
        values[i] = (float)(6.0 * uniform() - 4.0);
        float least = 1.5f - 8.0f;
        expected[i] = ((values[i] > least ? values[i] : least) + 4.0f) / 4.0f;
    }
    CHECK(nxe_audio_whisper_scale(values, 1000, 1.5f) == NXE_OK);
    CHECK(memcmp(values, expected, sizeof values) == 0);
    CHECK(nxe_audio_whisper_scale(NULL, 0, 0.0f) == NXE_OK);
    CHECK(nxe_audio_whisper_scale(NULL, 3, 0.0f) == NXE_ERROR_INVALID_ARGUMENT);
    CHECK(nxe_audio_whisper_scale(values, -1, 0.0f) == NXE_ERROR_INVALID_ARGUMENT);
    CHECK(nxe_audio_whisper_scale(values, 1000, NAN) == NXE_ERROR_INVALID_ARGUMENT);
    CHECK(nxe_audio_whisper_scale(values, 1000, INFINITY) == NXE_ERROR_INVALID_ARGUMENT);
    CHECK(memcmp(values, expected, sizeof values) == 0);
}

/* One call with a spoiled argument: refused, nothing written, *max_out 0. */
static void expect_refused(int line, const nxe_mel_spec *spec, const float *x, long long n,
                           long long first, long long frames, int with_out)
{
    float out[2 * 80], max_value = 5.0f;
    for (int i = 0; i < 2 * 80; i++)
        out[i] = 7.0f;
    nxe_status status =
        nxe_audio_log10_mel(spec, x, n, first, frames, with_out ? out : NULL, &max_value);
    int untouched = 1;
    for (int i = 0; i < 2 * 80; i++)
        untouched &= out[i] == 7.0f;
    if (status != NXE_ERROR_INVALID_ARGUMENT || !untouched || max_value != 0.0f ||
        strncmp(nxe_last_error(), "nxe_audio_log10_mel", 19) != 0) {
        fprintf(stderr, "audio.c:%d: not refused cleanly (status %d, last error: %s)\n", line,
                status, nxe_last_error());
        failures++;
    }
}

static void check_bad_arguments(void)
{
    static float filters[80 * 201];
    static float x[1000];
    x[500] = 1.0f;
    const nxe_mel_spec good = {sizeof(nxe_mel_spec), 400, 160, 80, filters};
    nxe_mel_spec spec = good;
    float out[2 * 80], max_value;
    CHECK(nxe_audio_log10_mel(&spec, x, 1000, 0, 2, out, &max_value) == NXE_OK);
    CHECK(nxe_audio_log10_mel(&spec, NULL, 0, 0, 2, out, NULL) == NXE_OK);
    CHECK(nxe_audio_log10_mel(&spec, x, 1000, 7, 0, NULL, &max_value) == NXE_OK);
    CHECK(max_value == log10f(1e-10f));

    expect_refused(__LINE__, NULL, x, 1000, 0, 2, 1);
    spec.struct_size = 4;
    expect_refused(__LINE__, &spec, x, 1000, 0, 2, 1);
    const int bad_fields[][3] = {{1, 1, 80},     {65537, 160, 80}, {400, 0, 80},
                                 {400, 401, 80}, {400, 160, 0},    {400, 160, 4097}};
    for (size_t i = 0; i < sizeof bad_fields / sizeof bad_fields[0]; i++) {
        spec = good;
        spec.n_fft = bad_fields[i][0];
        spec.hop_length = bad_fields[i][1];
        spec.n_mels = bad_fields[i][2];
        expect_refused(__LINE__, &spec, x, 1000, 0, 2, 1);
    }
    spec = good;
    spec.filters = NULL;
    expect_refused(__LINE__, &spec, x, 1000, 0, 2, 1);
    filters[7] = NAN;
    expect_refused(__LINE__, &good, x, 1000, 0, 2, 1);
    filters[7] = 0.0f;
    expect_refused(__LINE__, &good, NULL, 1000, 0, 2, 1);
    expect_refused(__LINE__, &good, x, -1, 0, 2, 1);
    expect_refused(__LINE__, &good, x, 1000, -1, 2, 1);
    expect_refused(__LINE__, &good, x, 1000, 0, -2, 1);
    expect_refused(__LINE__, &good, x, 1000, 0, 2, 0);
    expect_refused(__LINE__, &good, x, 1000, INT64_MAX - 1, 2, 1);
    expect_refused(__LINE__, &good, x, 1000, INT64_MAX / 100, 2, 1);
    expect_refused(__LINE__, &good, x, 1000, 0, INT64_MAX / 80 + 1, 1);
    x[300] = INFINITY;
    expect_refused(__LINE__, &good, x, 1000, 0, 2, 1);
    /* Frame 1 reads samples [-40, 360); frame 0's reflection reaches sample 200. */
    expect_refused(__LINE__, &good, x, 1000, 1, 1, 1);
    CHECK(nxe_audio_log10_mel(&good, x, 1000, 4, 1, out, &max_value) == NXE_OK);
    x[300] = 0.0f;
}

int main(void)
{
    check_against_direct_dft(400, 160, 80, 4000);  /* Whisper's: 200 = 4 * 2 * 5 * 5 */
    check_against_direct_dft(400, 160, 80, 150);   /* shorter than a frame */
    check_against_direct_dft(400, 160, 80, 0);     /* no samples */
    check_against_direct_dft(512, 128, 40, 3000);  /* 256 = 4^4 */
    check_against_direct_dft(486, 100, 20, 3000);  /* 243 = 3^5 */
    check_against_direct_dft(1000, 250, 64, 5000); /* 500 = 4 * 5^3 */
    check_against_direct_dft(286, 64, 16, 2000);   /* 143 = 11 * 13: the generic butterfly */
    check_against_direct_dft(7, 3, 3, 100);        /* odd: a complex transform of 7 */
    check_against_direct_dft(45, 9, 5, 500);       /* odd: 3 * 3 * 5 */
    check_against_direct_dft(2, 1, 1, 50);         /* the smallest frame */
    check_threads();
    check_whisper_scale();
    check_bad_arguments();
    if (failures)
        fprintf(stderr, "audio.c: %d checks failed\n", failures);
    return failures ? 1 : 0;
}
