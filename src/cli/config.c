/* ipu-exec info --config [--markdown]: the settings table (common/settings)
 * with the values this environment gives and where each comes from, or as
 * the markdown of docs/settings.md. Needs no launcher: under one, rank 0
 * alone prints. */
#include "cli/cli.h"
#include "common/launcher.h"
#include "common/settings.h"

#include <stdio.h>
#include <string.h>

static const char *const source_names[] = {
    [IPU_SETTING_FROM_DEFAULT] = "default",
    [IPU_SETTING_FROM_ENV] = "environment",
    [IPU_SETTING_FROM_CLAMPED] = "environment, clamped",
    [IPU_SETTING_FROM_INVALID] = "default: environment value invalid",
};

static void print_current(void)
{
    printf("# setting=value, where it comes from, type and values, default: description\n");
    for (int id = 0; id < IPU_SET_COUNT; id++) {
        const ipu_setting_def_t *d = ipu_setting_def(id);
        char value[128], assign[192], values[256], dflt[128];
        ipu_setting_source_t src = ipu_setting_current(id, value, sizeof(value));
        const char *from = source_names[src];
        if (src == IPU_SETTING_FROM_INVALID && (d->flags & IPU_SETTING_STRICT))
            from = "environment, invalid: an error";
        snprintf(assign, sizeof(assign), "%s=%s", d->name, value);
        printf("%-32s (%s) %s %s, default %s: %s\n", assign, from, ipu_setting_type_name(d->type),
               ipu_setting_values_text(id, values, sizeof(values)), ipu_setting_default_text(id, dflt, sizeof(dflt)),
               d->doc);
    }
}

static void print_markdown(void)
{
    printf("# Settings\n\n"
           "<!-- Generated from the table in src/common/settings.c by `ipu-exec info --config --markdown`;\n"
           "     tests/cli/run.sh fails when this file differs from what it prints. -->\n\n"
           "The environment variables of ipu-exec (`IPU_EXEC_*`) and libgcl (`GCL_*`).\n"
           "An unset or empty variable means the default. A value is checked when it\n"
           "is read: an invalid one (unparsable, or out of range) gives one warning\n"
           "per process naming the setting and the value used instead, the default or,\n"
           "where the values say \"clamped\", the nearest bound; an unknown\n"
           "`GCL_<COLL>_ALGO` name makes `gcl_init` fail. `ipu-exec info --config`\n"
           "prints the values the current environment gives and where each comes from.\n\n"
           "Types: **bool** `1` or `0` (also yes/no, on/off, true/false); **int** a\n"
           "decimal integer; **size** bytes, an integer (`0x` for hex) with an optional\n"
           "`K`, `M`, `G` or `T` suffix (K = 1024; `KiB` and `KB` read the same);\n"
           "**choice** one of the names listed (any case). A default described in words\n"
           "is computed when the setting is read.\n\n"
           "| Setting | Type | Default | Values | Description |\n"
           "|---|---|---|---|---|\n");
    for (int id = 0; id < IPU_SET_COUNT; id++) {
        const ipu_setting_def_t *d = ipu_setting_def(id);
        char values[256], dflt[128];
        printf("| `%s` | %s | ", d->name, ipu_setting_type_name(d->type));
        printf(d->dflt ? "`%s` | " : "%s | ", ipu_setting_default_text(id, dflt, sizeof(dflt)));
        for (int k = 0; d->type == IPU_SETTING_CHOICE && d->choices[k]; k++)
            printf("%s`%s`", k ? ", " : "", d->choices[k]);
        if (d->type != IPU_SETTING_CHOICE)
            printf("%s", ipu_setting_values_text(id, values, sizeof(values)));
        printf(" | %s |\n", d->doc);
    }
}

int cli_config_main(int markdown)
{
    if (ipu_launcher().rank > 0)
        return 0;
    if (markdown)
        print_markdown();
    else
        print_current();
    return fflush(stdout) == 0 ? 0 : 3;
}
