"""The report's context as the pipeline builds it: the findings stage's
derive(), through JSON as its files carry it, then the report's
build_context (tests that render a report from in-memory tables)."""

from __future__ import annotations

import json

from membench.findings.document import derive
from membench.report.render import build_context


def context_of(*, figures: dict, provenance: dict, **tables) -> dict:
    derived = json.loads(json.dumps(derive(**tables)))
    return build_context(derived, figures, provenance)
