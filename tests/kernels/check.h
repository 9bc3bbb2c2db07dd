/* check.h — the counting CHECK of the kernel test programs: a failed check prints its place
 * and message (the first 40 of them) and the program ends with the counts. One copy per
 * program: include it from the file that holds main. */
#ifndef NXE_TESTS_KERNELS_CHECK_H
#define NXE_TESTS_KERNELS_CHECK_H

#include <stdio.h>

static int failures;
static int checks;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        checks++;                                                                                  \
        if (!(cond)) {                                                                             \
            failures++;                                                                            \
            if (failures <= 40) {                                                                  \
                printf("FAIL %s:%d: ", __FILE__, __LINE__);                                        \
                printf(__VA_ARGS__);                                                               \
                printf("\n");                                                                      \
            }                                                                                      \
        }                                                                                          \
    } while (0)

#endif
