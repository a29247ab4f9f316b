rule render_report:
    input:
        findings=SUMMARY["findings"],
        sections=SUMMARY["sections"],
        figures=report_figures(),
        template=from_workdir(REPO / "reports" / "report.html.j2"),
        stylesheet=from_workdir(REPO / "reports" / "report.css"),
        code=PACKAGE_SOURCES,
    output:
        "results/report.html",
    log:
        "logs/render_report.log",
    conda:
        "../../envs/python.yaml"
    resources:
        machine=1,
    params:
        provenance=about.provenance(REPO, CONFIG),
    script:
        "../scripts/render_report.py"
