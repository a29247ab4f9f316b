# Variant names may hold hyphens (nt-avx512, v012-avx512), so the kernel
# wildcard only matches a family of kernels/families/variants.yaml: the split of
# <kernel>-<variant> is then unambiguous.
rule build_kernel:
    input:
        # the harness and the family's own files only (variants.yaml)
        sources=lambda wildcards: variants.source_paths(
            VARIANTS, KERNEL_DIR, wildcards.kernel
        ),
        headers=variants.header_paths(VARIANTS, KERNEL_DIR),
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
        **slurm_resources(),
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
    # profiles' ignore-incomplete).
    shell:
        "{params.cc} {params.cflags:q} {input.sources:q} {params.ldflags:q} -o {output:q}.part > {log:q} 2>&1"
        " && mv {output:q}.part {output:q}"
