/* The settings table's parser and checks (common/settings): valid values,
 * out of range (default or clamp), garbage, size suffixes, booleans,
 * choices, the strict (error) settings, and one warning per setting. */
#include "common/settings.h"
#include "common/status.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

/* parse text as setting id: its source, and the value in *v (preset to -7) */
static ipu_setting_source_t parse(ipu_setting_id_t id, const char *text, long long *v)
{
    *v = -7;
    return ipu_setting_parse(id, text, v, NULL, 0);
}

/* text parses as setting id with source src and value want */
static void expect(ipu_setting_id_t id, const char *text, ipu_setting_source_t src, long long want)
{
    long long v;
    assert_int_equal(parse(id, text, &v), src);
    assert_int_equal(v, want);
}

static void test_defaults(void **state)
{
    (void)state;
    for (int id = 0; id < IPU_SET_COUNT; id++) {
        const ipu_setting_def_t *d = ipu_setting_def(id);
        long long v;
        assert_non_null(d->name);
        assert_non_null(d->doc);
        assert_null(strchr(d->doc, '|')); /* a markdown cell */
        assert_int_equal(parse(id, NULL, &v), IPU_SETTING_FROM_DEFAULT);
        assert_int_equal(parse(id, "", &v), IPU_SETTING_FROM_DEFAULT);
        if (d->dflt == NULL) {
            assert_non_null(d->auto_default);
            assert_int_equal(v, -7); /* the reader's */
            continue;
        }
        /* every default is a valid value of its own setting */
        long long w;
        assert_int_equal(parse(id, d->dflt, &w), IPU_SETTING_FROM_ENV);
        assert_int_equal(v, w);
    }
}

static void test_int(void **state)
{
    (void)state;
    long long v;
    expect(IPU_SET_IPU_EXEC_ABORT_GRACE, "0", IPU_SETTING_FROM_ENV, 0);
    expect(IPU_SET_IPU_EXEC_ABORT_GRACE, "25", IPU_SETTING_FROM_ENV, 25);
    /* out of range, garbage: the default */
    expect(IPU_SET_IPU_EXEC_ABORT_GRACE, "-1", IPU_SETTING_FROM_INVALID, 10);
    expect(IPU_SET_IPU_EXEC_ABORT_GRACE, "1000000001", IPU_SETTING_FROM_INVALID, 10);
    expect(IPU_SET_IPU_EXEC_ABORT_GRACE, "5s", IPU_SETTING_FROM_INVALID, 10);
    expect(IPU_SET_IPU_EXEC_ABORT_GRACE, "abc", IPU_SETTING_FROM_INVALID, 10);
    expect(IPU_SET_GCL_TOPO_PPN, "2", IPU_SETTING_FROM_ENV, 2);
    expect(IPU_SET_GCL_TOPO_PPN, "-2", IPU_SETTING_FROM_INVALID, 0);
    /* a clamped setting: the nearest bound, also beyond a long long */
    char why[200];
    assert_int_equal(ipu_setting_parse(IPU_SET_GCL_SHM_NBUF, "9", &v, why, sizeof(why)), IPU_SETTING_FROM_CLAMPED);
    assert_int_equal(v, 6);
    assert_string_equal(why, "out of range (3 to 6)");
    expect(IPU_SET_GCL_SHM_NBUF, "0", IPU_SETTING_FROM_CLAMPED, 3);
    expect(IPU_SET_GCL_SHM_NBUF, "-1", IPU_SETTING_FROM_CLAMPED, 3);
    expect(IPU_SET_GCL_SHM_NBUF, "99999999999999999999", IPU_SETTING_FROM_CLAMPED, 6);
    expect(IPU_SET_GCL_SHM_NBUF, "5", IPU_SETTING_FROM_ENV, 5);
    expect(IPU_SET_GCL_SHM_NBUF, "x", IPU_SETTING_FROM_INVALID, 3);
}

static void test_size(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        long long bytes;
    } ok[] = {
        {"4096", 4096},     {"64K", 65536},        {"64k", 65536},          {"64KiB", 65536}, {"64KB", 65536},
        {"1M", 1 << 20},    {"1MiB", 1 << 20},     {"2G", 2LL << 30},       {"1T", 1LL << 40}, {"0x1000", 4096},
        {"8192B", 8192},    {"1.5M", 3 << 19},     {"010K", 10 << 10},      {"4.5K", 4608},   {"0x10K", 16 << 10},   {"9223372036854775807", 0x7fffffffffffffffLL},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        expect(IPU_SET_GCL_SEGMENT_BYTES, ok[i].text, IPU_SETTING_FROM_ENV, ok[i].bytes);
    static const char *const bad[] = {"-1", "K", "12Q", "0.3K", "1.", "0x1.8K", "64KX", "4096 B", "+4096", "99999999999999999999",
                                      "16777216T", "x"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        expect(IPU_SET_GCL_SEGMENT_BYTES, bad[i], IPU_SETTING_FROM_INVALID, 256 << 10);
    /* the range: outside it the default (this one does not clamp) */
    expect(IPU_SET_GCL_SEGMENT_BYTES, "4095", IPU_SETTING_FROM_INVALID, 256 << 10);
    expect(IPU_SET_GCL_SHM_SLOT_BYTES, "256M", IPU_SETTING_FROM_ENV, 256 << 20);
    expect(IPU_SET_GCL_SHM_SLOT_BYTES, "257M", IPU_SETTING_FROM_INVALID, 256 << 10);
    expect(IPU_SET_GCL_SHM_STREAM_BYTES, "1", IPU_SETTING_FROM_ENV, 1);
    /* a computed default: left to the reader */
    expect(IPU_SET_GCL_SHM_STREAM_BYTES, "lots", IPU_SETTING_FROM_INVALID, -7);
}

static void test_bool(void **state)
{
    (void)state;
    static const char *const yes[] = {"1", "y", "yes", "YES", "on", "On", "true", "TRUE"};
    static const char *const no[] = {"0", "n", "no", "NO", "off", "false", "False"};
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
        expect(IPU_SET_GCL_DEBUG, yes[i], IPU_SETTING_FROM_ENV, 1);
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
        expect(IPU_SET_GCL_NO_SHM, no[i], IPU_SETTING_FROM_ENV, 0);
    expect(IPU_SET_GCL_DEBUG, "2", IPU_SETTING_FROM_INVALID, 0);
    expect(IPU_SET_GCL_DEBUG, "auto", IPU_SETTING_FROM_INVALID, 0);
    /* with "auto" (-1, also the default) */
    expect(IPU_SET_GCL_SHM_STAGE_NT, "auto", IPU_SETTING_FROM_ENV, -1);
    expect(IPU_SET_GCL_SHM_STAGE_NT, "1", IPU_SETTING_FROM_ENV, 1);
    expect(IPU_SET_GCL_YIELD_WHEN_IDLE, NULL, IPU_SETTING_FROM_DEFAULT, -1);
    expect(IPU_SET_GCL_YIELD_WHEN_IDLE, "maybe", IPU_SETTING_FROM_INVALID, -1);
}

static void test_choice(void **state)
{
    (void)state;
    long long v;
    char why[200];
    expect(IPU_SET_IPU_EXEC_LOG_LEVEL, "debug", IPU_SETTING_FROM_ENV, 3);
    expect(IPU_SET_GCL_LOG, "Info", IPU_SETTING_FROM_ENV, 1);
    assert_int_equal(ipu_setting_parse(IPU_SET_IPU_EXEC_LOG_LEVEL, "verbose", &v, why, sizeof(why)),
                     IPU_SETTING_FROM_INVALID);
    assert_int_equal(v, 1);
    assert_string_equal(why, "expected one of error, warn, info, debug");
    /* strict: invalid is the reader's error, nothing written */
    assert_int_equal(parse(IPU_SET_GCL_ALLREDUCE_ALGO, "ring", &v), IPU_SETTING_FROM_ENV);
    assert_string_equal(ipu_setting_def(IPU_SET_GCL_ALLREDUCE_ALGO)->choices[v], "ring");
    expect(IPU_SET_GCL_ALLREDUCE_ALGO, "no_such_algorithm", IPU_SETTING_FROM_INVALID, -7);
}

static void test_text(void **state)
{
    (void)state;
    char buf[256];
    assert_string_equal(ipu_setting_values_text(IPU_SET_GCL_SHM_SLOT_BYTES, buf, sizeof(buf)), "4K to 256M");
    assert_string_equal(ipu_setting_values_text(IPU_SET_GCL_SEGMENT_BYTES, buf, sizeof(buf)), "from 4K");
    assert_string_equal(ipu_setting_values_text(IPU_SET_GCL_SHM_NBUF, buf, sizeof(buf)), "3 to 6 (clamped)");
    assert_string_equal(ipu_setting_values_text(IPU_SET_GCL_SHM_STAGE_NT, buf, sizeof(buf)), "auto, 1, 0");
    assert_string_equal(ipu_setting_values_text(IPU_SET_GCL_BARRIER_ALGO, buf, sizeof(buf)),
                        "auto, dissemination, shm");
    assert_string_equal(ipu_setting_default_text(IPU_SET_GCL_SEGMENT_BYTES, buf, sizeof(buf)), "256K");
    assert_string_equal(ipu_setting_type_name(IPU_SETTING_SIZE), "size");
}

/* the getters read the environment; an invalid value warns once */
static void test_getters(void **state)
{
    (void)state;
    char buf[64];
    size_t z = 123;
    int i = 5;
    unsetenv("GCL_SHM_DIRECT_MIN");
    assert_int_equal(ipu_setting_size(IPU_SET_GCL_SHM_DIRECT_MIN, &z), 0);
    assert_int_equal(z, 123); /* computed by the reader */
    assert_int_equal(ipu_setting_current(IPU_SET_GCL_SHM_DIRECT_MIN, buf, sizeof(buf)), IPU_SETTING_FROM_DEFAULT);
    assert_string_equal(buf, "(computed)");
    setenv("GCL_SHM_DIRECT_MIN", "4K", 1);
    assert_int_equal(ipu_setting_size(IPU_SET_GCL_SHM_DIRECT_MIN, &z), 1);
    assert_int_equal(z, 4096);
    assert_int_equal(ipu_setting_current(IPU_SET_GCL_SHM_DIRECT_MIN, buf, sizeof(buf)), IPU_SETTING_FROM_ENV);
    assert_string_equal(buf, "4K");
    setenv("GCL_SHM_NBUF", "12", 1);
    assert_int_equal(ipu_setting_current(IPU_SET_GCL_SHM_NBUF, buf, sizeof(buf)), IPU_SETTING_FROM_CLAMPED);
    assert_string_equal(buf, "6");

    /* warnings go to stderr: count them in a file */
    fflush(stderr);
    int saved = dup(2);
    FILE *f = tmpfile();
    assert_non_null(f);
    dup2(fileno(f), 2);
    assert_int_equal(ipu_setting_int(IPU_SET_GCL_SHM_NBUF, &i), 1);
    assert_int_equal(i, 6);
    assert_int_equal(ipu_setting_int(IPU_SET_GCL_SHM_NBUF, &i), 1); /* no second warning */
    setenv("IPU_EXEC_ABORT_GRACE", "soon", 1);
    assert_int_equal(ipu_setting_int(IPU_SET_IPU_EXEC_ABORT_GRACE, &i), 0);
    assert_int_equal(i, 10);
    setenv("GCL_ALLREDUCE_ALGO", "nonsense", 1);
    i = 4;
    assert_int_equal(ipu_setting_choice(IPU_SET_GCL_ALLREDUCE_ALGO, &i), IPU_ERR_INVALID_ARG); /* silent */
    assert_int_equal(i, 4);
    assert_string_equal(ipu_setting_env(IPU_SET_GCL_ALLREDUCE_ALGO), "nonsense");
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char text[1024] = "";
    rewind(f);
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    assert_string_equal(text, "libgcl: warning: GCL_SHM_NBUF=12: out of range (3 to 6); using 6\n"
                              "ipu-exec: warning: IPU_EXEC_ABORT_GRACE=soon: not an integer; using the default, 10\n");
    unsetenv("GCL_SHM_DIRECT_MIN");
    unsetenv("GCL_SHM_NBUF");
    unsetenv("IPU_EXEC_ABORT_GRACE");
    unsetenv("GCL_ALLREDUCE_ALGO");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults), cmocka_unit_test(test_int),  cmocka_unit_test(test_size),
        cmocka_unit_test(test_bool),     cmocka_unit_test(test_choice), cmocka_unit_test(test_text),
        cmocka_unit_test(test_getters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
