"""Checkpoint plan_next_round: round k of a run within a budget, planned
from the findings of rounds 0..k-1 (membench.findings.next_round). Writes
the round's study (the requests of the cells it measures: none ends the
run) with why, and says it on the terminal."""

import sys
import time

STARTED = time.monotonic()
sys.stderr = open(snakemake.log[0], "w")

import json  # noqa: E402
from pathlib import Path  # noqa: E402

from membench.core.atomic_files import write_text_atomic  # noqa: E402
from membench.findings import next_round  # noqa: E402
from membench.plan import budget, grammar, rounds, variants  # noqa: E402

config = snakemake.params.config
system, round_index = snakemake.wildcards.system, int(snakemake.wildcards.round)
table = variants.load_variants(snakemake.params.variants)
cells = grammar.expand({"experiments": config["experiments"]}, table)
# findings name concrete cells (a node-matrix cell's pairs); a round measures config cells
config_ids = rounds.config_cell_ids(cells, json.loads(Path(snakemake.input.topology).read_text()))
open_ids = {cell.id for cell in cells if cell.repeats > round_index}  # a repetition k left within its repeats
may_repeat = lambda cell_id: config_ids.get(cell_id, cell_id) in open_ids  # noqa: E731
manifests, budget_s = list(snakemake.input.manifests), budget.seconds(config.get("budget"))
# the plan before this one, when it holds for this round too (next_round.rounds_ahead)
before = Path(snakemake.output[0]).with_name(Path(snakemake.output[0]).name.replace(f"plan{round_index}-", f"plan{round_index - 1}-", 1))
previous = json.loads(before.read_text()) if before.is_file() else None
held = next_round.continued(previous, round_index, manifests, budget_s, may_repeat)
if held is not None:
    chosen, why, numbers = held
else:
    chosen, why, numbers = next_round.plan(manifests, config, system, snakemake.input.topology,
                                           snakemake.input.environment, budget_s, may_repeat)
    looked = time.monotonic() - STARTED  # the look's whole cost in this process, imports included
    if chosen:
        ahead = next_round.rounds_ahead(looked, numbers["expected_s"])
        numbers.update(ahead_until=round_index + ahead, looked_at=round_index)
wanted = {config_ids.get(cell_id, cell_id) for cell_id in chosen}
study = rounds.RoundInputs(config, cells, table).adaptive_study(system, round_index, wanted) if chosen else {
    "system": system, "round": round_index, "shuffle_seed": config["shuffle_seed"], "requests": []}
study.update(why=why, **numbers)
write_text_atomic(snakemake.output[0], json.dumps(study, sort_keys=True))
tally = f" ({numbers['decided']} of {numbers['findings']} findings decided)" if "findings" in numbers else ""
line = f"{system} round {round_index}, planned{tally}: " + (f"measures {why}" if study["requests"] else f"nothing to measure: {why}; the run ends")
print(line, file=sys.__stderr__, flush=True)
print(line, file=sys.stderr)
