"""Theoretical peak bandwidth: dmidecode outputs of a few layouts
(tests/fixtures/dmidecode), the config's peak winning over the probe,
every bandwidth as a share of it, and a system whose peak is unknown
drawing no line and inventing no share."""

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from markupsafe import Markup

from membench.plan import checks
from membench.probe import dmidecode
from membench.plan import grammar
from membench.analyse import peak
from membench.figures import peak_lines
from membench.report import render as report
from report_context import ENVIRONMENT, context_of, stored_row
from membench.analyse import stats
from membench.probe import topology
from membench.plan import variants

FIXTURES = Path(__file__).parent / "fixtures" / "dmidecode"
REPO = Path(__file__).resolve().parents[1]


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


@pytest.mark.parametrize(
    "name, packages, per_socket, channels",
    [
        # Supermicro: "P0_Node1_Channel2_Dimm0" bank locators, 2 x 6 channels, DDR4-2933 run at 2666 MT/s
        ("two_sockets_all_channels.txt", 2, [127.968, 127.968], [6, 6]),
        # one EPYC socket, "P0 CHANNEL C": 4 of 8 channels populated, DDR4-3200
        ("one_socket_empty_channels.txt", 1, [102.4], [4]),
        # "CPU1_DIMM_H1" locators, DDR5-4800 with 80-bit ECC width: 8 data bytes per transfer
        ("two_sockets_ddr5.txt", 2, [307.2, 307.2], [8, 8]),
    ],
)
def test_peak_of_populated_channels(name, packages, per_socket, channels):
    found = dmidecode.peak_from_dmidecode(fixture(name), packages)
    assert found["known"] and found["socket_gbps"] == per_socket and found["channels_per_socket"] == channels
    assert found["total_gbps"] == pytest.approx(sum(per_socket))
    assert found["bytes_per_transfer"] == [8]


def test_configured_speed_not_the_rated_one():
    found = dmidecode.peak_from_dmidecode(fixture("two_sockets_all_channels.txt"), 2)
    assert found["mts"] == [2666]  # the DIMMs are rated 2933 MT/s


@pytest.mark.parametrize(
    "name, why",
    [
        ("locators_without_channels.txt", "name no channel (e.g. 'A1')"),
        ("vm_qemu_smbios.txt", "state no configured speed"),
        ("vm_no_entry_point.txt", "no SMBIOS memory table"),
        ("no_smbios.txt", "no SMBIOS memory table"),
    ],
)
def test_what_cannot_be_told_is_unknown_with_its_reason(name, why):
    found = dmidecode.peak_from_dmidecode(fixture(name), 2)
    assert not found["known"] and why in found["reason"] and "socket_gbps" not in found


def test_no_socket_named_on_a_two_socket_machine_is_unknown():
    text = fixture("one_socket_empty_channels.txt").replace("P0 CHANNEL", "CHANNEL")
    assert dmidecode.peak_from_dmidecode(text, 1)["known"]
    assert "name no socket" in dmidecode.peak_from_dmidecode(text, 2)["reason"]


@pytest.mark.parametrize(
    "bank, locator, channel",
    [
        ("P1_Node0_Channel2_Dimm1", "P2-DIMMC2", ("1", "0", "2")),
        ("P0 CHANNEL A", "DIMM 0", ("0", None, "A")),
        ("BANK 3", "CPU1_DIMM_D2", ("1", None, "D")),
        ("Not Specified", "P2-DIMMF1", ("2", None, "F")),
        ("Not Specified", "A1", None),
        ("Not Specified", "DIMM 0", None),
    ],
)
def test_channel_from_locators(bank, locator, channel):
    assert dmidecode.channel_of({"Bank Locator": bank, "Locator": locator}) == channel


def test_missing_dmidecode_is_said(monkeypatch):
    text, why = dmidecode.run_dmidecode("membench-no-such-dmidecode")
    assert text is None and "not installed" in why


def test_probe_of_a_captured_tree_does_not_ask_this_machine(tmp_path):
    (tmp_path / "proc").mkdir()
    topology.write_probe(str(tmp_path), str(tmp_path / "t.json"), str(tmp_path / "e.json"))
    found = json.loads((tmp_path / "e.json").read_text())["memory_peak"]
    assert found["known"] is False and "captured tree" in found["reason"]


TWO_NODES = {"packages": 2, "line_bytes": 64, "nodes": [{"node": 0, "cpus": [0, 1]}, {"node": 1, "cpus": [2, 3]}]}
PROBED = {"memory_peak": {**dmidecode.peak_from_dmidecode(fixture("two_sockets_all_channels.txt"), 2),
                          "source": "dmidecode -t memory", "caveats": list(dmidecode.CAVEATS)}}  # fmt: skip


def test_config_wins_over_the_probe_and_names_its_source():
    stated = {"peak": {"channels": 8, "mts": 3200}}
    found = peak.system_peak("box", stated, TWO_NODES, PROBED)
    assert found["source"] == "config (systems.box.peak)" and found["total_gbps"] == pytest.approx(2 * 204.8)
    probed = peak.system_peak("box", {}, TWO_NODES, PROBED)
    assert probed["source"] == "probe (dmidecode -t memory)" and probed["total_gbps"] == pytest.approx(255.936)
    assert probed["node_gbps"] == pytest.approx(127.968) and probed["caveats"]
    direct = peak.system_peak("box", {"peak": {"socket_gbps": 102, "sockets": 1}}, TWO_NODES, {})
    assert direct["total_gbps"] == 102 and direct["node_gbps"] == 51


def test_neither_source_is_unknown():
    assert "not stated in the config" in peak.system_peak("box", None, TWO_NODES, {})["reason"]
    vm = {"memory_peak": {"known": False, "reason": "dmidecode -t memory: no SMBIOS memory table"}}
    found = peak.system_peak("box", None, TWO_NODES, vm)
    assert not found["known"] and found["reason"].startswith("dmidecode -t memory: no SMBIOS")


def record(**values):
    return stored_row({"cell": "numa/local", "gbps": 60.0, "gbps_wa": 80.0}, **values)


def numa_cells() -> pd.DataFrame:
    rows = []
    for gbps in (60.0, 64.0):
        rows.append(record(gbps=gbps, gbps_wa=gbps * 4 / 3))
        rows.append(record(cell="numa/remote", policy_requested="remote", policy="bind:1", gbps=gbps / 2, gbps_wa=gbps / 2 * 4 / 3,
                           page_nodes='{"1": 1.0}'))  # fmt: skip
        rows.append(record(cell="numa/inter", policy_requested="interleave:all", policy="interleave:all", gbps=gbps * 1.5,
                           gbps_wa=gbps * 2, page_nodes='{"0": 0.5, "1": 0.49, "2": 0.01}'))  # fmt: skip
        for ws, ns in ((2**14, 1.5), (2**30, 100.0)):
            rows.append(record(experiment="lat", cell="lat/c", kernel="chase", op="random", threads_requested=1, threads=1,
                               gbps=math.nan, gbps_wa=math.nan, ns_per_load=ns, working_set_bytes=ws, size_bytes=ws,
                               chase_group_requested=262144))  # fmt: skip
    return stats.summarise_cells(pd.DataFrame(rows))


def test_shares_against_the_nodes_holding_the_pages():
    cells = numa_cells()
    peaks = {"box": peak.system_peak("box", {"peak": {"socket_gbps": 100, "interconnect_gbps": 20, "interconnect_links": 2}}, TWO_NODES, {})}
    shares = peak.cell_shares(cells, peaks).set_index("cell")
    assert shares.loc["numa/local", "peak_gbps"] == 100 and shares.loc["numa/local", "peak_of"] == "memory, 1 of 2 nodes"
    assert shares.loc["numa/local", "peak_share"] == pytest.approx(62 * 4 / 3 / 100)
    assert shares.loc["numa/local", "peak_share_best"] == pytest.approx(64 * 4 / 3 / 100)
    assert shares.loc["numa/inter", "peak_gbps"] == 200  # 2 nodes hold >= 5 % of the pages, the third 1 %
    assert shares.loc["numa/remote", "peak_gbps"] == 40 and shares.loc["numa/remote", "peak_of"].startswith("interconnect, 2 links")
    no_link = peak.cell_shares(cells, {"box": peak.system_peak("box", {"peak": {"socket_gbps": 100}}, TWO_NODES, {})})
    assert no_link.set_index("cell").loc["numa/remote", "peak_of"] == "memory (interconnect not stated), 1 of 2 nodes"
    assert "lat/c" not in shares.index  # latency cells have no bandwidth share
    best = peak.best_shares(peak.cell_shares(cells, peaks))
    assert [(b["family"], b["experiment"], b["op"]) for b in best] == [("stream", "numa", "triad")]
    assert best[0]["share"] == pytest.approx(max(shares["peak_share"]))


def test_unknown_peak_invents_no_share_and_draws_no_line():
    cells = numa_cells()
    unknown = {"box": peak.system_peak("box", None, TWO_NODES, {})}
    assert peak.cell_shares(cells, unknown).empty
    systems = {"box": {"topology": TWO_NODES, "environment": {}}}
    assert peak_lines.peak_lines(cells, systems, None) == []
    lines = peak_lines.peak_lines(cells, systems, {"box": {"peak": {"socket_gbps": 100}}})
    assert [v for v, _ in lines] == [200, 100] and "config (systems.box.peak)" in lines[0][1]


def test_scaling_figure_marks_the_peak():
    from membench.figures import bandwidth

    cells = numa_cells()
    cells = cells[cells["kernel"] == "stream"]
    with_line = bandwidth.scaling_svg(cells, "s", [(200.0, "peak 200.0 GB/s: memory, 2 of 2 nodes (config)")])
    assert "peak 200.0 GB/s: memory, 2 of 2 nodes" in with_line
    assert "peak" not in bandwidth.scaling_svg(cells, "s", [])
    far = bandwidth.scaling_svg(cells, "s", [(5000.0, "peak 5000.0 GB/s: memory, 2 of 2 nodes (config)")])
    assert "↑ off scale, peak 5000.0 GB/s" in far  # named, not drawn: the curves keep their axis


TOPOLOGY = {
    **TWO_NODES, "cpu_model": "Fake", "cpu_flags": [], "cores": 4, "llc_bytes": 2**20,
    "cpus": [{"cpu": c, "core": c, "package": c // 2, "node": c // 2, "siblings": [c]} for c in range(4)],
    "nodes": [{"node": n, "cpus": [2 * n, 2 * n + 1], "memory_bytes": 2**34, "distances": [10, 21]} for n in range(2)],
    "caches": [],
}  # fmt: skip


def render(systems_config: dict | None, environment: dict) -> str:
    cells = numa_cells()
    config = {"experiments": {"numa": {"kernel": "stream", "policy": ["default", "remote", "interleave:all"]}, "lat": {"kernel": "chase"}}}
    if systems_config:
        config["systems"] = systems_config
    context = context_of(
        config=config, cells=cells, problems=stats.problem_cells(pd.DataFrame([record()])), figures={},
        systems={"box": {"topology": TOPOLOGY, "environment": environment}},
        provenance={"membench_version": "t", "commit": "abc", "config_hash": "h", "snakemake_version": "9", "rendered_at": "now"},
    )  # fmt: skip
    env = report.make_environment(report.TEMPLATE_DIR)
    return env.get_template("report.html.j2").render(**context, stylesheet=Markup(""))


def test_report_names_the_source_and_shows_shares():
    html = render({"box": {"peak": {"socket_gbps": 100}}}, {**ENVIRONMENT, **PROBED})
    assert "source: config (systems.box.peak)" in html and "probe (dmidecode" not in html
    assert "Bandwidth against the theoretical peak" in html and "triad % of peak" in html
    assert "<td>83 %</td>" in html  # local triad: 62 GB/s x 4/3 traffic against 1 node's 100 GB/s
    assert "Closest to the theoretical peak" in html and "lines for peak" in html
    probed = render(None, {**ENVIRONMENT, **PROBED})
    assert "source: probe (dmidecode -t memory)" in probed and "255.9 GB/s" in probed


def test_report_with_an_unknown_peak_says_so_once_and_shows_no_share():
    html = render(None, {**ENVIRONMENT, "memory_peak": {"known": False, "reason": "dmidecode -t memory: no SMBIOS memory table"}})
    assert html.count("unknown: dmidecode -t memory: no SMBIOS memory table") == 1
    assert "% of peak" not in html and "lines for peak" not in html and "Closest to the theoretical peak" not in html


def test_bad_peak_config_names_every_problem():
    config = {
        "systems": {"a": {"peak": {"channels": "six", "socket_gbps": 0, "speed": 3200}}, "b": {"peak": {"mts": 3200, "interconnect_links": 2}}},
        "experiments": {"x": {"kernel": "stream"}},
    }
    with pytest.raises(grammar.ConfigError) as error:
        checks.load(config, REPO / "workflow/schemas/config.schema.yaml", variants.load_variants(REPO / "kernels/families/variants.yaml"))
    text = str(error.value)
    for expected in (
        "systems.a.peak.channels: 'six' is a string, of the wrong type; allowed: an integer >= 1",
        "systems.a.peak.socket_gbps: 0 is not allowed; allowed: a number of GB/s (1e9 B/s) > 0",
        "systems.a.peak: unknown key 'speed' (value 3200); allowed keys: bytes_per_transfer, channels,",
        "systems.a.peak: {'channels': 'six', 'socket_gbps': 0, 'speed': 3200} gives the peak twice",
        "systems.b.peak: {'mts': 3200, 'interconnect_links': 2} lacks channels",
        "systems.b.peak.interconnect_links: 2 without interconnect_gbps",
    ):
        assert expected in text


def test_the_documented_example_is_a_valid_config():
    text = (REPO / "config" / "README.md").read_text()
    example = text[text.index("```yaml\n   systems:") + 8 : text.index("```", text.index("```yaml\n   systems:") + 8)]
    import textwrap

    import yaml

    systems = yaml.safe_load(textwrap.dedent(example))["systems"]
    config, _ = checks.load(
        {"systems": systems, "experiments": {"x": {"kernel": "stream"}}},
        REPO / "workflow/schemas/config.schema.yaml",
        variants.load_variants(REPO / "kernels/families/variants.yaml"),
    )
    found = peak.system_peak("skx2", config["systems"]["skx2"], TWO_NODES, PROBED)
    assert found["source"] == "config (systems.skx2.peak)" and found["total_gbps"] == pytest.approx(2 * 6 * 2666 * 8 / 1000)
    assert found["interconnect_gbps"] == pytest.approx(41.6)
