/*
 * membench: what architecture and CPU a record was measured on (arch.h):
 * the architecture, the CPU's implementer, part and name (Arm: MIDR_EL1,
 * decoded with arm_parts.h; x86: cpuinfo's model name), the SVE vector
 * length and the page sizes.  Read once per process.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "placement.h"
#include "table.h"

#if defined(__aarch64__)
#include <sys/auxv.h>
#define MB_HWCAP_CPUID (1UL << 11)
#define MB_ARCH "aarch64"
#elif defined(__x86_64__)
#define MB_ARCH "x86_64"
#else
#define MB_ARCH "unknown"
#endif

typedef struct cpu_identity {
    char implementer[16], part[16], name[128];
} cpu_identity_t;

/* the value of "key : value" lines of /proc/cpuinfo (the first one) */
static int cpuinfo_value(const char *key, char *out, size_t len)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    int found = 0;
    size_t klen = strlen(key);
    while (f && !found && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        /* the key, then only blanks up to the colon */
        if (!colon || strncmp(line, key, klen) != 0 ||
            line + klen + strspn(line + klen, " \t") != colon)
            continue;
        char *v = colon + 1 + strspn(colon + 1, " \t");
        v[strcspn(v, "\n")] = '\0';
        snprintf(out, len, "%s", v);
        found = 1;
    }
    if (f)
        fclose(f);
    return found;
}

#if defined(__aarch64__)
static const char *arm_part_name(unsigned impl, unsigned part)
{
#define MB_ARM_PART(i, p, n) if (impl == (i) && part == (p)) return n;
#include "arm_parts.h"
#undef MB_ARM_PART
    return NULL;
}
#endif

static void identify(cpu_identity_t *id)
{
    memset(id, 0, sizeof *id);
#if defined(__aarch64__)
    unsigned long midr = 0;
    if (getauxval(AT_HWCAP) & MB_HWCAP_CPUID) /* the kernel emulates the read */
        __asm__ volatile("mrs %0, midr_el1" : "=r"(midr));
    unsigned impl = (unsigned)(midr >> 24) & 0xff, part = (unsigned)(midr >> 4) & 0xfff;
    if (!midr) { /* no cpuid hwcap: cpuinfo's lines */
        char v[64];
        if (cpuinfo_value("CPU implementer", v, sizeof v))
            impl = (unsigned)strtoul(v, NULL, 0);
        if (cpuinfo_value("CPU part", v, sizeof v))
            part = (unsigned)strtoul(v, NULL, 0);
    }
    if (midr || impl || part) {
        snprintf(id->implementer, sizeof id->implementer, "0x%02x", impl);
        snprintf(id->part, sizeof id->part, "0x%03x", part);
        const char *name = arm_part_name(impl, part);
        if (name)
            snprintf(id->name, sizeof id->name, "%s", name);
    }
#else
    cpuinfo_value("model name", id->name, sizeof id->name);
#endif
}

void mb_arch_keys(jbuf_t *b)
{
    static cpu_identity_t id;
    static int known;
    if (!known) {
        identify(&id);
        known = 1;
    }
    kv_str(b, "arch", MB_ARCH);
    kv_str(b, "cpu_implementer", id.implementer[0] ? id.implementer : NULL);
    kv_str(b, "cpu_part", id.part[0] ? id.part : NULL);
    kv_str(b, "cpu_name", id.name[0] ? id.name : NULL);
    kv_int(b, "sve_vector_bits", mb_sve_vector_bits());
    kv_int(b, "base_page_bytes", (long long)mb_base_page_bytes());
    kv_int(b, "thp_bytes", (long long)mb_thp_bytes());
}
