"""The findings stage: each experiment's answer and every number the report
and the terminal show, as data (results/summary/findings.json, sections.json)."""
