/* expect.h — the checks the C tests share: counters and EXPECT_* macros that name the file,
 * line and call, with nxe_last_error() on failure. Each test program includes it once (the
 * counters are its own); main reports `failures` of `checks`. */
#ifndef NXE_TEST_EXPECT_H
#define NXE_TEST_EXPECT_H

#include <stdio.h>
#include <string.h>

#include <nxe/nxe.h>

static int checks;
static int failures;

/* The file's name without its directories, as the messages print it. */
static const char *expect_file_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Expects `got` == `expected`; on failure statuses also a message containing `needle`. */
static void expect_status(nxe_status got, nxe_status expected, const char *needle, const char *what,
                          const char *file, int line)
{
    checks++;
    if (got != expected) {
        fprintf(stderr, "%s:%d: %s returned %s, expected %s (last error: \"%s\")\n",
                expect_file_name(file), line, what, nxe_status_name(got), nxe_status_name(expected),
                nxe_last_error());
        failures++;
        return;
    }
    if (expected != NXE_OK && needle && !strstr(nxe_last_error(), needle)) {
        fprintf(stderr, "%s:%d: %s: message \"%s\" does not mention \"%s\"\n",
                expect_file_name(file), line, what, nxe_last_error(), needle);
        failures++;
    }
}

#define EXPECT_OK(call) expect_status((call), NXE_OK, NULL, #call, __FILE__, __LINE__)
#define EXPECT_FAIL(call, status, needle)                                                          \
    expect_status((call), (status), (needle), #call, __FILE__, __LINE__)
#define EXPECT_TRUE(cond)                                                                          \
    do {                                                                                           \
        checks++;                                                                                  \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: %s is false\n", expect_file_name(__FILE__), __LINE__, #cond);  \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

#endif
