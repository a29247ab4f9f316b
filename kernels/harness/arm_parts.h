/*
 * Arm CPU parts by MIDR implementer and part number: the cores of the
 * servers membench runs on (Graviton, Grace, Altra, A64FX, Kunpeng) and a
 * few that QEMU models.  One row per line, MB_ARM_PART(implementer, part,
 * name): the harness includes it (arch.c) and the probe reads it
 * (membench.probe.arm_cpu), so both decode alike.  Sources: Arm's Technical
 * Reference Manuals (MIDR_EL1 of each core) and Linux's cputype.h.
 */
MB_ARM_PART(0x41, 0xd03, "Cortex-A53")
MB_ARM_PART(0x41, 0xd07, "Cortex-A57")
MB_ARM_PART(0x41, 0xd08, "Cortex-A72")
MB_ARM_PART(0x41, 0xd0c, "Neoverse N1")
MB_ARM_PART(0x41, 0xd40, "Neoverse V1")
MB_ARM_PART(0x41, 0xd49, "Neoverse N2")
MB_ARM_PART(0x41, 0xd4f, "Neoverse V2")
MB_ARM_PART(0x41, 0xd84, "Neoverse V3")
MB_ARM_PART(0x41, 0xd8e, "Neoverse N3")
MB_ARM_PART(0x46, 0x001, "A64FX")
MB_ARM_PART(0x48, 0xd01, "Kunpeng 920 (TaiShan v110)")
MB_ARM_PART(0x50, 0x000, "X-Gene")
MB_ARM_PART(0xc0, 0xac3, "AmpereOne")
MB_ARM_PART(0x61, 0x022, "Apple M1 Icestorm")
