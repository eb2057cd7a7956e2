/* Reference data for unit tests: a temporary folder (under $TMPDIR, else
 * /tmp) filled by a Python script of tests/unit run with $PYTHON_REF
 * (default /usr/bin/python3) from $top_srcdir (default "."). */
#ifndef IPU_TESTS_REFDIR_H
#define IPU_TESTS_REFDIR_H

#include <stddef.h>

/* Make the folder (name into dir[len], prefix names it) and run
 * `PYTHON_REF top_srcdir/tests/unit/script DIR`. Returns 0, or -1 with a
 * message on stderr. */
int refdir_make(const char *prefix, const char *script, char *dir, size_t len);
/* Contents of DIR/<name>.<part>.bin, which must hold exactly bytes bytes
 * (malloc'd; the caller frees). A missing or wrongly sized file fails the
 * running cmocka test. */
void *refdir_load(const char *dir, const char *name, const char *part, size_t bytes);
/* Remove the folder and what is in it. */
void refdir_remove(const char *dir);

#endif
