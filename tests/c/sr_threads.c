/* sr_threads.c — one nxe_sr session shared by several threads: frames of three sizes (so that
 * calls keep reconfiguring the session) and two formats go through it from four threads at
 * once, and every output must equal, byte for byte, what a session used from one thread
 * gives for the same frame. The threads are waited for with a deadline: a hang fails. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nxe/nxe_sr.h>

#define THREADS 4
#define ROUNDS 3
#define FRAMES 6
#define DEADLINE_SECONDS 240

/* A frame with its planes, laid out as nxe_sr_format_info describes the format. */
typedef struct frame_buffer {
    nxe_sr_frame frame;
    unsigned char *planes[4];
    size_t bytes[4];
} frame_buffer;

static int frame_alloc(frame_buffer *b, int32_t format, int32_t w, int32_t h, unsigned seed)
{
    memset(b, 0, sizeof *b);
    nxe_sr_format_desc desc = {.struct_size = sizeof desc};
    if (nxe_sr_format_info(format, &desc) != NXE_OK)
        return -1;
    nxe_sr_frame init = NXE_SR_FRAME_INIT;
    b->frame = init;
    b->frame.format = format;
    b->frame.width = w;
    b->frame.height = h;
    for (int p = 0; p < desc.planes; p++) {
        int32_t pw = p ? (w + desc.chroma_x - 1) / desc.chroma_x : w;
        int32_t ph = p ? (h + desc.chroma_y - 1) / desc.chroma_y : h;
        int64_t row = (int64_t)pw * desc.plane_samples[p] * desc.sample_bytes;
        b->bytes[p] = (size_t)(row * ph);
        b->planes[p] = malloc(b->bytes[p]);
        if (!b->planes[p])
            return -1;
        for (size_t i = 0; i < b->bytes[p]; i++) {
            seed = seed * 1103515245u + 12345u;
            b->planes[p][i] = (unsigned char)(48 + (seed >> 16) % 160);
        }
        b->frame.data[p] = b->planes[p];
        b->frame.strides[p] = row;
    }
    return 0;
}

static void frame_free(frame_buffer *b)
{
    for (int p = 0; p < 4; p++)
        free(b->planes[p]);
}

static nxe_sr *open_session(void)
{
    nxe_sr_options options = NXE_SR_OPTIONS_INIT;
    options.num_threads = 2;
    options.tile_size = 24; /* the three sizes below need three tile shapes */
    nxe_sr *sr = NULL;
    if (nxe_sr_open("espcn-x2", &options, &sr) != NXE_OK)
        fprintf(stderr, "sr_threads.c: nxe_sr_open: %s\n", nxe_sr_last_error());
    return sr;
}

static frame_buffer inputs[FRAMES], expected[FRAMES];

typedef struct worker {
    pthread_t thread;
    int index;
    nxe_sr *sr;
    int wrong, failed; /* outputs that differ from expected[], calls that failed */
} worker;

static pthread_mutex_t done_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_signal = PTHREAD_COND_INITIALIZER;
static int done;

static void *work(void *arg)
{
    worker *me = arg;
    for (int round = 0; round < ROUNDS; round++)
        for (int k = 0; k < FRAMES; k++) {
            /* Each thread starts at another frame, so sizes meet in the session at once. */
            int i = (k + me->index + round) % FRAMES;
            const nxe_sr_frame *in = &inputs[i].frame;
            frame_buffer out;
            if (frame_alloc(&out, in->format, in->width * 2, in->height * 2, 0) != 0) {
                me->failed++;
                frame_free(&out);
                continue;
            }
            if (nxe_sr_process(me->sr, in, &out.frame) != NXE_OK) {
                fprintf(stderr, "sr_threads.c: thread %d frame %d: %s\n", me->index, i,
                        nxe_sr_last_error());
                me->failed++;
            } else {
                for (int p = 0; p < 4; p++)
                    if (out.bytes[p] &&
                        memcmp(out.planes[p], expected[i].planes[p], out.bytes[p]) != 0) {
                        me->wrong++;
                        break;
                    }
            }
            frame_free(&out);
        }
    pthread_mutex_lock(&done_lock);
    done++;
    pthread_cond_signal(&done_signal);
    pthread_mutex_unlock(&done_lock);
    return NULL;
}

int main(void)
{
    const int32_t sizes[3][2] = {{53, 37}, {30, 22}, {17, 41}};
    const int32_t formats[2] = {NXE_SR_FORMAT_YUV420P, NXE_SR_FORMAT_BGRA};
    nxe_sr *alone = open_session(), *shared = open_session();
    if (!alone || !shared)
        return 1;
    for (int i = 0; i < FRAMES; i++) {
        int32_t w = sizes[i % 3][0], h = sizes[i % 3][1], format = formats[i % 2];
        if (frame_alloc(&inputs[i], format, w, h, (unsigned)i + 1) != 0 ||
            frame_alloc(&expected[i], format, 2 * w, 2 * h, 0) != 0 ||
            nxe_sr_process(alone, &inputs[i].frame, &expected[i].frame) != NXE_OK) {
            fprintf(stderr, "sr_threads.c: reference frame %d: %s\n", i, nxe_sr_last_error());
            return 1;
        }
    }

    worker workers[THREADS];
    for (int t = 0; t < THREADS; t++) {
        workers[t] = (worker){.index = t, .sr = shared};
        if (pthread_create(&workers[t].thread, NULL, work, &workers[t]) != 0) {
            fprintf(stderr, "sr_threads.c: cannot start thread %d\n", t);
            return 1;
        }
    }
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += DEADLINE_SECONDS;
    pthread_mutex_lock(&done_lock);
    int wait_status = 0;
    while (done < THREADS && wait_status != ETIMEDOUT)
        wait_status = pthread_cond_timedwait(&done_signal, &done_lock, &deadline);
    int finished = done;
    pthread_mutex_unlock(&done_lock);
    if (finished < THREADS) {
        /* Threads that never finish cannot be joined; end the process with the failure. */
        fprintf(stderr, "sr_threads.c: %d of %d threads still running after %d s\n",
                THREADS - finished, THREADS, DEADLINE_SECONDS);
        return 1;
    }

    int wrong = 0, failed = 0;
    for (int t = 0; t < THREADS; t++) {
        pthread_join(workers[t].thread, NULL);
        wrong += workers[t].wrong;
        failed += workers[t].failed;
    }
    nxe_sr_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    int status = nxe_sr_get_info(shared, &info);
    int calls = THREADS * ROUNDS * FRAMES;
    if (wrong || failed || status != NXE_OK || info.frames != (uint64_t)calls) {
        fprintf(stderr,
                "sr_threads.c: of %d calls %d failed and %d gave outputs unlike one thread's; "
                "the session counted %llu frames\n",
                calls, failed, wrong, (unsigned long long)info.frames);
        return 1;
    }
    for (int i = 0; i < FRAMES; i++) {
        frame_free(&inputs[i]);
        frame_free(&expected[i]);
    }
    nxe_sr_release(alone);
    nxe_sr_release(shared);
    return 0;
}
