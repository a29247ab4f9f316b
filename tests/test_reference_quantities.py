"""The quantities a published number is held against
(references/quantities.yaml, issue 53): the families they name are
membench's, of the trait each quantity says, and a number that `make
reference` writes is held against the quantity it was written from."""

import pytest

from membench.compare import reference, reference_entry
from membench.plan import families

QUANTITIES = reference.quantities()


@pytest.mark.parametrize("key", list(QUANTITIES))
def test_each_quantity_names_a_family_of_its_trait(key):
    wanted = QUANTITIES[key]
    assert wanted["kernel"] in families.FAMILIES
    assert families.family(wanted["kernel"]).metric == wanted["metric"]


def test_the_latencies_are_the_idle_chase_and_the_loaded_family():
    assert QUANTITIES["idle latency"]["kernel"] == families.idle_latency()[0]
    assert QUANTITIES["loaded latency"]["kernel"] == families.one(lambda t: t.metric == families.LOADED)


def run_keys() -> list:
    per_op = QUANTITIES["stream op"]
    return [(per_op["name"], op) for op in per_op["ops"]] + [k for k in QUANTITIES if "ops" not in QUANTITIES[k]]


@pytest.mark.parametrize("key", run_keys(), ids=str)
def test_a_written_number_is_held_against_its_own_quantity(key):
    fields = reference_entry.number_fields(key)
    units = QUANTITIES["stream op" if isinstance(key, tuple) else key]["units"]
    assert all(reference.counterpart({**fields, "unit": unit}) == key for unit in units)


def test_a_number_of_no_quantity_is_held_against_none():
    assert reference.counterpart({"quantity": "bandwidth", "kernel": "stream", "op": "nt-copy", "unit": "GB/s"}) is None
    assert reference.counterpart({"quantity": "latency", "kernel": "chase", "level": "l2", "unit": "ns"}) is None
    assert reference.counterpart({"quantity": "latency", "kernel": "loaded", "unit": "cycles"}) is None
