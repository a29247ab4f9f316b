/*
 * membench harness: what the CPU a thread runs on is doing (cpu.c).
 */
#ifndef MEMBENCH_CPU_H
#define MEMBENCH_CPU_H

/* The core clock of the calling thread's CPU in GHz, measured by a chain of
 * dependent register adds (cpu.c); NAN off x86-64 and aarch64. */
double mb_core_ghz(void);
/* The same from `trials` trials of ~1 ms (the best of them). */
double mb_core_ghz_trials(int trials);

#endif
