# The harness (kernels/harness/: no family, no variant) is compiled once per
# system into one archive, with the toolchain's arch flags at a fixed level
# (variants.yaml common.harness); every binary of the system links it.
# The commands are plan/variants.py's, as the tests run them.
rule build_harness:
    input:
        sources=variants.harness_paths(VARIANTS, KERNEL_DIR),
        headers=variants.harness_header_paths(VARIANTS, KERNEL_DIR),
    output:
        layout.harness_archive("bin/{system}"),
    log:
        "logs/build_harness/{system}.log",
    conda:
        "../../envs/build.yaml"
    resources:
        **SLURM_RESOURCES,
        machine=1,
    params:
        # compile into a folder beside the archive, archive, remove the folder
        commands=lambda wildcards, output: variants.command_line(
            variants.harness_commands(VARIANTS, KERNEL_DIR, f"{output[0]}.part")
        ),
    # Archived beside the target and renamed (see build_kernel); an archive
    # left by a killed run is removed first: ar would add to it.
    shell:
        "rm -f {output:q}.part && ({params.commands}) > {log:q} 2>&1"
        " && mv {output:q}.part {output:q}"


# Variant names may hold hyphens (nt-avx512, v012-avx512), so the kernel
# wildcard only matches a family of kernels/families/variants.yaml: the split of
# <kernel>-<variant> is then unambiguous.
rule build_kernel:
    input:
        # the kernel table and the family's own files only (variants.yaml)
        sources=lambda wildcards: variants.source_paths(
            VARIANTS, KERNEL_DIR, wildcards.kernel
        ),
        headers=variants.header_paths(VARIANTS, KERNEL_DIR),
        harness=layout.harness_archive("bin/{system}"),
    output:
        "bin/{system}/{kernel}-{variant}",
    log:
        "logs/build_kernel/{system}/{kernel}-{variant}.log",
    wildcard_constraints:
        kernel=variants.family_pattern(VARIANTS),
        variant=variants.variant_pattern(VARIANTS),
    conda:
        "../../envs/build.yaml"
    resources:
        **SLURM_RESOURCES,
        machine=1,
    params:
        cflags=lambda wildcards: variants.compile_flags(
            VARIANTS, wildcards.kernel, wildcards.variant
        ),
        ldflags=variants.link_flags(VARIANTS),
        # the compiler of this machine's architecture (variants.yaml toolchains)
        cc=variants.compiler(VARIANTS),
    # Linked beside the target and renamed, as every output of the pipeline is
    # written: a file that exists is whole, even after a hard kill (see the
    # profiles' ignore-incomplete). The command is compile_argv's.
    shell:
        "{params.cc} {params.cflags:q} {input.sources:q} {input.harness:q} {params.ldflags:q} -o {output:q}.part > {log:q} 2>&1"
        " && mv {output:q}.part {output:q}"
