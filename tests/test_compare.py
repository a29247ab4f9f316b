"""make compare: planted changes on synthetic pairs give the right verdicts,
differing conditions are shown, unmatched cells are listed, the exit code
says whether anything got worse."""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy loads OpenBLAS (compare_results.py says why)

import json  # noqa: E402
import math  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from scipy import special  # noqa: E402
from scipy import stats as sps  # noqa: E402

from conftest import REPO  # noqa: E402

sys.path.insert(0, str(REPO / "tools"))
sys.path.insert(0, str(REPO / "bench"))

import synthetic_runs  # noqa: E402
import rank_interval  # noqa: E402  (the rank interval make compare used before; bench/verdict_options.py measures it)
from membench.compare import verdicts as row_verdicts  # noqa: E402
from membench.compare import match as compare
from membench.compare.output import run_compare  # noqa: E402

SYSTEM = "two-socket"
SCRIPT = REPO / "workflow" / "scripts" / "compare_results.py"


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """A small STREAM study (threads 1, 8 x none/close/spread, 20 runs)."""
    out = tmp_path_factory.mktemp("base")
    synthetic_runs.write_affinity_study(out, "aff", [1, 8], 20, machine="2x4x2", system=SYSTEM)
    return out


def side(study, tmp_path, name: str, seed: int, factor=lambda cell: 1.0, repeats: int | None = None):
    """A copy of the study with fresh noise (1 %, seeded) and the planted
    factor(cell id) on every bandwidth; only the first `repeats` runs."""
    target = tmp_path / name
    shutil.copytree(study, target)
    rng = np.random.default_rng(seed)
    for path in sorted((target / "results" / SYSTEM / "runs").glob("**/r*.jsonl")):
        if repeats is not None and int(path.stem[1:]) >= repeats:
            path.unlink()
            continue
        records = [json.loads(line) for line in path.read_text().splitlines()]
        for record in records:
            if record.get("gbps") is not None:
                scale = factor(record["cell"]) * math.exp(rng.normal(0, 0.01))
                record["gbps"] *= scale
                record["gbps_wa"] *= scale
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return target


SLOW_CELL = "t1_close"


def slower(share):
    return lambda cell: share if SLOW_CELL in cell else 1.0


def verdicts(result, where=lambda row: True) -> set[str]:
    return {r["verdict"] for r in result["rows"] if where(r)}


# ------------------------------------------------------------- statistics


def test_lower_rank_matches_the_mann_whitney_tables():
    # the rank interval, kept for bench/verdict_options.py: two-sided 0.05 critical values of U
    assert [rank_interval.lower_rank(n, n, 0.95) for n in (3, 4, 5, 10, 20)] == [0, 1, 3, 24, 128]
    exact = rank_interval.lower_rank(50, 50, 0.95)
    assert abs(rank_interval.lower_rank(51, 51, 0.95) - exact * (51 * 51) / 2500) < 40


class _StudentT:
    """scipy.stats.t's cdf, sf and ppf as scipy.special computes them, less
    the distribution object's 50 us a call (test_fast_t_is_scipys_t)."""

    @staticmethod
    def cdf(x, df):
        return special.stdtr(df, x)

    @staticmethod
    def sf(x, df):
        return special.stdtr(df, -np.asarray(x))

    @staticmethod
    def ppf(q, df):
        return special.stdtrit(df, q)


@pytest.fixture
def fast_t():
    """The verdict code computes Student's t through scipy.special itself
    now (membench.compare.verdicts; test_fast_t_is_scipys_t holds that it is
    scipy.stats.t): the rate tests use it as it is."""
    yield


def test_fast_t_is_scipys_t():
    x, df = np.linspace(-40, 40, 161)[:, None], np.array([1.2, 2, 4.7, 18, 1e4, math.inf])
    assert np.allclose(_StudentT.cdf(x, df), sps.t.cdf(x, df), rtol=1e-12, atol=1e-300)
    assert np.allclose(_StudentT.sf(x, df), sps.t.sf(x, df), rtol=1e-12, atol=1e-300)
    q = np.array([0.5, 0.975, 1 - 0.05 / 260, 1 - 1e-7])[:, None]
    assert np.allclose(_StudentT.ppf(q, df), sps.t.ppf(q, df), rtol=1e-10)


def comparisons(rng, count, n, noises, factors, higher=True, gate=None):
    """count comparisons' rows, drawn at once: per factor, n lognormal
    values a side at the comparison's noise (noises cycles); gate: how many
    of the first rows are the gate (the rest exploratory), None = all."""
    noise = np.resize(np.asarray(noises, dtype=float), count)[:, None, None]
    shape = (count, len(factors), n)
    base = np.exp(rng.standard_normal(shape) * noise) * 100
    new = np.exp(rng.standard_normal(shape) * noise) * 100 * np.asarray(factors, dtype=float)[None, :, None]
    for b, w in zip(base, new):
        rows = [{**row_verdicts.row_statistics(x, y), "_higher": higher, "_gate": gate is None or i < gate}
                for i, (x, y) in enumerate(zip(b, w))]  # fmt: skip
        row_verdicts.decide_rows(rows, threshold=0.02, confidence=0.95)
        yield rows


def rows_of(rng, n, noise, factors, higher=True):
    """One comparison's rows: per factor, n lognormal values a side."""
    return next(comparisons(rng, 1, n, [noise], factors, higher))


@pytest.mark.parametrize("n", [2, 3, 5])
def test_no_change_is_called_in_at_most_five_percent_of_comparisons(n, fast_t):
    """The stated rate, over 400 draws of a 40-row comparison at 1-3 % noise:
    any worse/better row counts as a false alarm of the whole comparison."""
    drawn = comparisons(np.random.default_rng(n), 400, n, [0.01, 0.02, 0.03], [1.0] * 40)
    alarms = sum(any(r["verdict"] in ("worse", "better") for r in rows) for rows in drawn)
    assert alarms / 400 <= 0.05


def test_one_percent_at_two_runs_is_never_worse_or_better(fast_t):
    for rows in comparisons(np.random.default_rng(2), 300, 2, [0.001, 0.005, 0.01], [0.99, 1.01]):
        assert {r["verdict"] for r in rows} <= {"same", "undecided"}


def test_one_percent_with_five_runs_is_rarely_worse(fast_t):
    """The test that failed for 7 of 20 seeds asserted "never" for one seed;
    a 1 % change is inside the threshold, so a worse row is a false alarm:
    over 400 draws at each noise, at most the stated 5 % of comparisons."""
    for noise in (0.001, 0.005, 0.01, 0.02):
        drawn = comparisons(np.random.default_rng(5), 400, 5, [noise], [0.99] * 4)
        alarms = sum(any(r["verdict"] == "worse" for r in rows) for rows in drawn)
        assert alarms / 400 <= 0.05, noise


def test_fifteen_percent_in_all_five_runs_is_worse_among_many_rows(fast_t):
    """The issue's case: one cell's 4 ops 15 % slower (all 5 runs), among
    129 rows, at 1-2 % noise, the cell a headline one (15 gate rows, the
    rest exploratory: membench.compare.gate): worse in at least 95 % of 100
    draws, and no other row worse."""
    drawn = comparisons(np.random.default_rng(15), 100, 5, [0.01, 0.02], [0.85] * 4 + [1.0] * 125, gate=15)
    worse = sum(all(r["verdict"] == "worse" for r in rows[:4]) and all(r["verdict"] != "worse" for r in rows[4:])
                for rows in drawn)  # fmt: skip
    assert worse >= 95


def test_latency_is_better_when_lower():
    base, new = np.linspace(100, 101, 5), np.linspace(80, 81, 5)
    assert row_verdicts.compare_values(base, new, higher_is_better=False)["verdict"] == "better"
    assert row_verdicts.compare_values(base, new, higher_is_better=True)["verdict"] == "worse"


def test_identical_sides_are_same_when_their_spread_is_inside_the_threshold():
    values = np.random.default_rng(1).lognormal(0, 0.003, 5) * 100
    row = row_verdicts.compare_values(values, values, higher_is_better=True)
    assert row["verdict"] == "same" and row["ratio"] == pytest.approx(1.0)


def test_undecided_says_how_many_runs_would_decide():
    rng = np.random.default_rng(3)
    base, new = rng.lognormal(0, 0.03, 6) * 100, rng.lognormal(0, 0.03, 6) * 90
    row = row_verdicts.compare_values(base, new, higher_is_better=True, confidence=1 - 0.05 / 100)
    assert row["verdict"] == "undecided" and 6 < row["n_needed"] <= row_verdicts.REALISTIC
    too_few = row_verdicts.compare_values(base[:1], new[:1], higher_is_better=True)
    assert too_few["ratio_high"] == math.inf and too_few["verdict"] == "undecided"


def test_large_samples_use_the_bisection_and_agree_with_every_pair():
    rng = np.random.default_rng(5)
    base, new = rng.normal(0, 1, 1100), rng.normal(0.1, 1, 1000)
    fast = rank_interval._order_statistics(base, new, [5000, 550000])
    every = np.sort(np.subtract.outer(new, base).ravel())
    assert fast == pytest.approx([every[4999], every[549999]], abs=1e-9)


# ------------------------------------------------------------ end to end


def test_no_change_is_same_or_undecided(study, tmp_path):
    result, code = run_compare(str(side(study, tmp_path, "a", 1)), str(side(study, tmp_path, "b", 2)),
                               tmp_path / "out", html=False)  # fmt: skip
    assert verdicts(result) <= {"same", "undecided"} and code == 0
    assert len(result["rows"]) >= 24 and not result["pairs"][0]["unmatched"]
    assert "Same conditions" in result["pairs"][0]["headline"]


def test_ten_percent_slower_with_twenty_runs_is_worse(study, tmp_path):
    base, new = side(study, tmp_path, "a", 1), side(study, tmp_path, "b", 2, slower(0.9))
    result, code = run_compare(str(base), str(new), tmp_path / "out", html=False)
    planted = lambda row: SLOW_CELL in row["cell"] and row["placement_class"] == "all"  # noqa: E731
    assert verdicts(result, planted) == {"worse"} and code == 1
    assert verdicts(result, lambda row: not planted(row)) <= {"same", "undecided"}
    assert all(0.88 < r["ratio"] < 0.92 and r["ratio_high"] < 0.98 for r in result["rows"] if planted(r))
    assert result["rows"][0]["verdict"] == "worse"  # changes first
    # and the other way round it is better, exit code 0
    # (sides named as one system's directory and as results:system)
    result, code = run_compare(str(new / "results" / SYSTEM), f"{base / 'results'}:{SYSTEM}", tmp_path / "back",
                               html=False)  # fmt: skip
    assert verdicts(result, planted) == {"better"} and code == 0


def test_one_percent_with_five_runs_is_not_worse_end_to_end(study, tmp_path):
    base = side(study, tmp_path, "a", 1, repeats=5)
    new = side(study, tmp_path, "b", 2, slower(0.99), repeats=5)
    result, code = run_compare(str(base), str(new), tmp_path / "out", html=False)
    assert "worse" not in verdicts(result) and code == 0
    assert {r["n_base"] for r in result["rows"]} == {5}


def test_changed_thp_mode_is_in_the_header(study, tmp_path):
    base, new = side(study, tmp_path, "a", 1), side(study, tmp_path, "b", 2)
    env_path = new / "results" / SYSTEM / "environment.json"
    env_path.write_text(json.dumps({**json.loads(env_path.read_text()), "thp_enabled": "always"}))
    result, _ = run_compare(str(base), str(new), tmp_path / "out", html=True)
    pair = result["pairs"][0]
    thp = [c for c in pair["conditions"] if c["what"] == "THP mode (enabled)"][0]
    assert thp["differs"] and (thp["base"], thp["new"]) == ("madvise", "always")
    assert pair["headline"].startswith("NOT like for like") and "THP mode" in pair["headline"]
    text = (tmp_path / "out" / "compare.txt").read_text()
    assert "THP mode (enabled): madvise  →  always" in text
    assert "madvise" in (tmp_path / "out" / "compare.html").read_text()


def test_unmatched_cells_are_listed(study, tmp_path):
    base, new = side(study, tmp_path, "a", 1), side(study, tmp_path, "b", 2)
    gone = next((new / "results" / SYSTEM / "runs").glob("aff/*/t8_spread*"))
    shutil.rmtree(gone)
    result, _ = run_compare(str(base), str(new), tmp_path / "out", html=False)
    unmatched = result["pairs"][0]["unmatched"]
    assert [(u["only_on"], u["cell"].split("/")[-1][:9]) for u in unmatched] == [("BASE", "t8_spread")]
    assert unmatched[0]["rows"] == 4  # copy, scale, add, triad
    assert "t8_spread" in (tmp_path / "out" / "compare.txt").read_text()
    assert not any("t8_spread" in r["cell"] for r in result["rows"])


def test_cells_match_on_knobs_not_names(study, tmp_path):
    base, new = side(study, tmp_path, "a", 1), side(study, tmp_path, "b", 2)
    for path in (new / "results" / SYSTEM / "runs").glob("**/r*.jsonl"):
        records = [{**json.loads(line), "experiment": "renamed"} for line in path.read_text().splitlines()]
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
    renamed = new / "results" / "renamed-system"
    (new / "results" / SYSTEM).rename(renamed)
    result, _ = run_compare(str(base), str(new), tmp_path / "out", html=False)
    assert len(result["rows"]) >= 24 and not result["pairs"][0]["unmatched"]
    assert result["rows"][0]["system"] == f"{SYSTEM} → renamed-system"


def test_ignore_matches_sides_that_differ_in_a_knob(study, tmp_path):
    base, new = side(study, tmp_path, "a", 1), side(study, tmp_path, "b", 2)
    for path in (new / "results" / SYSTEM / "runs").glob("**/r*.jsonl"):
        records = [{**json.loads(line), "pages": "thp"} for line in path.read_text().splitlines()]
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
    result, _ = run_compare(str(base), str(new), tmp_path / "out", html=False)
    assert not result["rows"] and len(result["pairs"][0]["unmatched"]) == 12
    assert any("differ in pages" in note and "IGNORE=pages" in note for note in result["pairs"][0]["notes"])
    result, _ = run_compare(str(base), str(new), tmp_path / "out", html=False, ignore=["pages"])
    assert len(result["rows"]) >= 24 and "pages" not in result["pairs"][0]["knobs"]
    # ignoring affinity would pool none, close and spread: refused
    with pytest.raises(compare.SideError, match="differ only in affinity"):
        run_compare(str(base), str(new), tmp_path / "out", html=False, ignore=["affinity"])


def test_ignore_takes_a_knobs_name_for_its_asked_column(study, tmp_path):
    """IGNORE names knobs as a person does (policy, affinity): each leaves
    out the column its records state it by (policy_requested), never a
    word that matches no column and so leaves nothing out."""
    base, new = side(study, tmp_path, "a", 1), side(study, tmp_path, "b", 2)
    for path in (new / "results" / SYSTEM / "runs").glob("**/r*.jsonl"):
        records = [{**json.loads(line), "policy_requested": "local"} for line in path.read_text().splitlines()]
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
    result, _ = run_compare(str(base), str(new), tmp_path / "out", html=False)
    assert not result["rows"] and any("differ in policy" in note and "IGNORE=policy" in note
                                      for note in result["pairs"][0]["notes"])  # fmt: skip
    result, _ = run_compare(str(base), str(new), tmp_path / "out", html=False, ignore=["policy"])
    assert len(result["rows"]) >= 24 and "policy_requested" not in result["pairs"][0]["knobs"]


def test_placement_that_differs_is_marked(study, tmp_path):
    base, new = side(study, tmp_path, "a", 1), side(study, tmp_path, "b", 2)
    for path in (new / "results" / SYSTEM / "runs").glob("aff/*/t1_close*/r*.jsonl"):
        records = [{**json.loads(line), "page_nodes": {"1": 1.0}} for line in path.read_text().splitlines()]
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
    result, _ = run_compare(str(base), str(new), tmp_path / "out", html=False)
    marked = {r["cell"] for r in result["rows"] if r["placement_differs"]}
    assert marked and all("t1_close" in cell for cell in marked)
    row = next(r for r in result["rows"] if r["placement_differs"])
    assert "page nodes: BASE local ×20, NEW remote ×20" in row["notes"]
    assert "≠ 4 row(s): verified placement differs" in (tmp_path / "out" / "compare.txt").read_text()


def test_the_figure_stays_bounded_at_many_cells():
    from membench.compare import html as compare_html

    rows = [{"experiment": "big", "cell": f"big/stream-default/t{i}", "op": "triad", "working_set_bytes": None,
             "placement_class": "all", "unit": "GB/s", "ratio": 1.0, "ratio_low": 0.99, "ratio_high": 1.01,
             "verdict": "worse" if i < 3 else "same"} for i in range(1000)]  # fmt: skip
    (section,) = compare_html.experiment_sections({"rows": rows, "threshold": 0.02})
    assert section["left_out"] == 960 and section["left_counts"] == {"same": 960}
    assert section["figure"].count("t0 triad") == 1 and "t40 triad" not in section["figure"]


def test_outputs_have_the_documented_columns_and_the_cli_exit_codes(study, tmp_path):
    base, new = side(study, tmp_path, "a", 1), side(study, tmp_path, "b", 2, slower(0.9))
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, str(SCRIPT), str(base), f"{new}:{SYSTEM}", "--out", str(out)],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert run.returncode == 1, run.stderr
    assert run.stdout.splitlines()[0].startswith("membench compare") and "worse" in run.stdout
    assert list(pd.read_csv(out / "compare.csv").columns) == compare.ROW_KEYS
    data = json.loads((out / "compare.json").read_text())
    assert list(data["rows"][0]) == compare.ROW_KEYS and data["counts"]["worse"] >= 4
    html = (out / "compare.html").read_text()
    assert html.count("<svg") == 1 and "{{" not in html
    bad = subprocess.run([sys.executable, str(SCRIPT), str(base), f"{new}:nosuch", "--out", str(out)],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert bad.returncode == 2 and "no system 'nosuch'" in bad.stderr


# ------------------------------------------------- real runs and planted pairs

REAL20 = REPO / "tests" / "fixtures" / "real20_here.csv"  # 20 repetitions measured on a 2-CPU AMD EPYC VM


def test_halves_of_a_real_twenty_repetition_run_at_the_threshold_edge_are_rarely_called_changed(fast_t):
    """One real 20-repetition run (4 cells, 10 rows; log-sd 12-47 %, its
    distributions as measured), split at random into halves of 3, 5 and 10
    runs, 200 ways each, one half moved to the threshold's edge (x 0.98 or
    x 1.02: a change not beyond the threshold, the least favourable one, so
    that the real spread decides how often a row is called): comparisons
    with any worse or better row stay within the stated 5 %. Plain halves
    could not fail: at these spreads nothing is decided."""
    table = pd.read_csv(REAL20)
    groups = {key: g.set_index("repeat")["gbps"] for key, g in table.groupby(["cell", "op"])}
    cells = sorted({cell for cell, _ in groups})
    for n in (3, 5, 10):
        rng = np.random.default_rng(n)
        alarms = 0
        for split_number in range(200):
            edge = 0.98 if split_number % 2 else 1.02
            split = {cell: rng.permutation(20) for cell in cells}
            rows = []
            for (cell, _), values in groups.items():
                pick = split[cell]
                rows.append({**row_verdicts.row_statistics(values.loc[pick[:n]], values.loc[pick[n:2 * n]] * edge),
                             "_higher": True})  # fmt: skip
            row_verdicts.decide_rows(rows, threshold=0.02, confidence=0.95)
            alarms += any(r["verdict"] in ("worse", "better") for r in rows)
        assert alarms / 200 <= 0.05, n


def test_fifteen_percent_slower_in_all_five_runs_is_worse_end_to_end(study, tmp_path):
    base = side(study, tmp_path, "a", 1, repeats=5)
    new = side(study, tmp_path, "b", 2, slower(0.85), repeats=5)
    result, code = run_compare(str(base), str(new), tmp_path / "out", html=False)
    planted = lambda row: SLOW_CELL in row["cell"] and row["placement_class"] == "all"  # noqa: E731
    assert verdicts(result, planted) == {"worse"} and code == 1
    assert verdicts(result, lambda row: not planted(row)) <= {"same", "undecided"}
    text = (tmp_path / "out" / "compare.txt").read_text()
    assert "False alarms:" in text and "What the repetitions can tell" in text


def test_results_compared_with_themselves_exit_zero_and_name_the_config_edit(study, tmp_path):
    """3 runs a side at 1 % noise cannot decide a 2 % threshold; compared
    with itself the estimate is exactly 1 (never on an edge), so every
    undecided row of a few % spread has a count, the text names the largest
    as the config edit, and the rows past REALISTIC are said apart."""
    base = side(study, tmp_path, "a", 1, repeats=3)
    result, code = run_compare(str(base), str(base), tmp_path / "out", html=False)
    assert verdicts(result) <= {"same", "undecided"} and code == 0
    undecided = [r for r in result["rows"] if r["verdict"] == "undecided"]
    # a count is for 95 % power with Hsu's df at the gate's level (no findings.json: every row the gate), so
    # rows at 0.4-1 % spread have one, those of a few % may need more than REALISTIC; the study's bimodal
    # cell (56 %) never has one
    assert undecided and all(3 < r["n_needed"] <= row_verdicts.REALISTIC if r["spread"] < 0.01 else
                             r["n_needed"] is None if r["spread"] >= 0.1 else True
                             for r in undecided), str([(r["n_needed"], r["spread"]) for r in undecided])  # fmt: skip
    assert any(r["n_needed"] for r in undecided)
    hopeless = [r for r in undecided if r["n_needed"] is None]
    undecided = [r for r in undecided if r["n_needed"]]
    needed = max(r["n_needed"] for r in undecided)
    text = (tmp_path / "out" / "compare.txt").read_text().splitlines()
    assert "  experiments:" in text and "    aff:" in text
    assert f"      repeats: {needed}    # {len(undecided)} undecided row(s) need {needed} a side" in text
    assert any(line.startswith("Undecided with no realistic count") and f"aff ({len(hopeless)})" in line for line in text)


def test_a_chase_sweep_is_compared_per_hierarchy_level_not_per_point():
    """A sweep of 19 points (4 KiB to 1 GiB) gives one row per level (L1,
    L2, L3, memory), each process's points in a level its geometric mean;
    an L2 15 % slower in every run is worse there and nowhere else."""
    topology = synthetic_runs.MACHINES["2x16x2"].topology()  # L1 48 KiB, L2 2 MiB, L3 32 MiB
    rng = np.random.default_rng(7)

    def side(label, l2_factor):
        rows = []
        for repeat in range(5):
            for k in range(12, 31):
                ws = 2**k
                ns = 1.2 if ws <= 48 * 2**10 else 4.1 * l2_factor if ws <= 2**21 else 14.8 if ws <= 2**25 else 96.0
                rows.append({"system": "s", "experiment": "lat", "cell": "lat/c", "kernel": "chase", "op": "random",
                             "status": "ok", "repeat": repeat, "working_set_bytes": ws, "threads_requested": 1,
                             "ns_per_load": ns * rng.lognormal(0, 0.01)})  # fmt: skip
        return compare.Side(label, label, REPO, "s", None, topology, pd.DataFrame(rows))

    found = compare.compare_sides(side("BASE", 1.0), side("NEW", 1.15), ignore=[])
    rows = compare.decide(found["groups"], threshold=0.02, confidence=0.95)
    by_level = {r["sweep_level"].split(" ")[0]: r for r in rows}
    assert len(rows) == 4 and set(by_level) == {"L1", "L2", "L3", "memory"}, [r["sweep_level"] for r in rows]
    assert by_level["L2"]["verdict"] == "worse" and by_level["L2"]["n_base"] == 5
    assert {by_level[k]["verdict"] for k in ("L1", "L3", "memory")} <= {"same", "undecided"}
    assert by_level["L2"]["sweep_level"] == "L2 (6 points 64 KiB–2 MiB)"
