/* Shared by the libFuzzer targets of tests/fuzz/: the readers under test
 * take a path, so each input is written to a file of a private folder made
 * once per process (under $TMPDIR, else /dev/shm, else /tmp; removed at
 * exit), and every error they return must carry a message as the command
 * line tool prints it: one line, not empty. */
#ifndef IPU_TESTS_FUZZ_FILE_H
#define IPU_TESTS_FUZZ_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

/* The path of file name (e.g. "model.onnx") in the private folder, holding
 * exactly data[0..size); clears the recorded error message (so that
 * fuzz_check_error sees a failure that records none). Aborts if the folder or the file cannot be
 * written (a broken harness, not a finding). The string is static. */
const char *fuzz_file(const char *name, const uint8_t *data, size_t size);

/* Abort (a finding libFuzzer saves) when st is an error whose message is
 * empty or holds a control byte (not one line), or st is IPU_ERR_INTERNAL (a bug by definition,
 * common/status.h); what names the call in the report. */
void fuzz_check_error(ipu_status_t st, const char *what);

#endif
