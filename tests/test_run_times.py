"""The report's one "Run time" section (reproductions.reproduce.RunTimes): every reproduction's
wall time split into training, measures, figures and writing, for a run and for a re-judge."""

from __future__ import annotations

import json
import re
import time

import numpy as np
import pytest
import xarray as xr

from shallowflow.config import experiment_from_mapping
from shallowflow.reproductions import reproduce
from shallowflow.reproductions.base import Figure, Params, Reproduction, run_time
from shallowflow.reproductions.claims import Claim, threshold

PAUSE = {"simulate": 0.3, "judge": 0.2, "draw": 0.25}
"""Seconds each piece of the toy reproduction sleeps beside its own work."""
SPENT: dict[str, float] = {}
"""Wall seconds the toy reproduction measured itself, per piece (training: its train call)."""


class ToyParams(Params):
    steps: int = 20


def simulate(P: ToyParams, train) -> xr.Dataset:
    exp = experiment_from_mapping({
        "runs": 2, "data": {"kind": "sphere", "n": 6, "d": 3}, "model": {"width": 4},
        "init": {"scheme": "dpb"}, "train": {"lr": 0.01, "steps": P.steps},
        "record": {"points": 5, "probes": ["loss"]}})
    t0 = time.perf_counter()
    ds = train([exp])[0]
    SPENT["training"] = time.perf_counter() - t0
    time.sleep(PAUSE["simulate"])
    return xr.Dataset({"loss": (("run", "time"), ds["loss"].values)})


def judge(ds: xr.Dataset, P: ToyParams) -> list[Claim]:
    time.sleep(PAUSE["judge"])
    return [Claim("falls", "the loss falls", 0.0, float(ds["loss"].values[0, -1]), "reproduced",
                  source=threshold("a test's own rule"))]


def draw(ds: xr.Dataset, P: ToyParams) -> list[Figure]:
    import matplotlib.pyplot as plt

    time.sleep(PAUSE["draw"])
    fig, ax = plt.subplots()
    ax.plot(np.asarray(ds["loss"].values[0]))
    return [Figure("toy", fig, "the loss")]


TOY = Reproduction("toy-times", "a toy", "none", ToyParams, {"quick": {"steps": 20}}, simulate,
                   judge, draw, lambda ds, P: [("Method", "Toy."), run_time(ds, runs=True)])


def section(report: str) -> str:
    """The text of the report's "Run time" section (exactly one)."""
    assert report.count("## Run time") == 1
    return report.split("## Run time", 1)[1].split("\n## ", 1)[0]


def seconds(text: str, part: str) -> float:
    return float(re.search(rf"{part} ([0-9.]+) s", text).group(1))


def test_run_and_rejudge_state_their_split(tmp_path, monkeypatch):
    monkeypatch.setattr(reproduce, "lookup", lambda name: TOY)
    start = time.perf_counter()
    folder, _ = reproduce.run_reproduction("toy-times", tmp_path / "run", show_progress=False)
    outside = time.perf_counter() - start
    saved = json.loads((folder / "params.json").read_text())
    times = reproduce.RunTimes(**saved["times"])
    # each part holds what happened in it (the toy's own clocks and pauses) and no more than
    # the whole call; together they are the wall time
    assert SPENT["training"] - 0.05 <= times.training <= SPENT["training"]  # inside the toy's clock
    assert times.simulate_measures >= PAUSE["simulate"]
    assert times.judging >= PAUSE["judge"] and times.figures >= PAUSE["draw"]
    assert times.writing > 0
    assert saved["wall_s"] == pytest.approx(times.total) and times.total <= outside
    text = section((folder / "report.md").read_text())
    assert seconds(text, "training") == pytest.approx(times.training, abs=0.051)
    assert seconds(text, "measures") == pytest.approx(times.measures, abs=0.051)
    assert seconds(text, "figures") == pytest.approx(times.figures, abs=0.051)
    assert seconds(text, "Everything but training:") == pytest.approx(
        times.total - times.training, abs=0.051)
    assert "Runs trained: 2." in text  # the reproduction's own note, folded in
    assert "Wall time" not in (folder / "report.md").read_text().split("## Settings")[1]

    again, _ = reproduce.rejudge("toy-times", folder, tmp_path / "again", show_progress=False)
    resaved = json.loads((again / "params.json").read_text())
    redone = reproduce.RunTimes(**resaved["times"])
    assert redone.training == 0 and redone.simulate_measures == 0
    assert redone.judging >= PAUSE["judge"] and redone.figures >= PAUSE["draw"]
    assert resaved["simulation_times"] == saved["times"]
    text = section((again / "report.md").read_text())
    assert "without training" in text
    assert f"took {saved['wall_s']:.1f} s" in text and times.describe() in text
    # a re-judge of the re-judge still names the run that trained it
    third, _ = reproduce.rejudge("toy-times", again, tmp_path / "third", show_progress=False)
    text = section((third / "report.md").read_text())
    assert f"took {saved['wall_s']:.1f} s" in text and times.describe() in text


def test_saved_split_read_back_strictly():
    good = {"training": 1, "simulate_measures": 0.5, "judging": 0.1, "figures": 2.0,
            "writing": 0.0}
    assert reproduce.RunTimes.of(good).total == pytest.approx(3.6)
    for bad in (None, [], {**good, "training": True}, {**good, "extra": 1.0},
                {k: v for k, v in good.items() if k != "writing"}, {**good, "figures": "2"}):
        assert reproduce.RunTimes.of(bad) is None
