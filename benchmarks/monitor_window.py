"""A monitor's window of 1,000 sampled traces scored (`score_window`: the traces read from the store, their
outputs replayed) against an experiment of the same 1,000 items with the same evaluators (its agent returning
the same outputs): the goal of issue 39 is the window within 1.1x the experiment's time.

    .venv/bin/python benchmarks/monitor_window.py --traces 1000 --repeats 7 --from-spans

Each window's traces are read from their summary rows (`trace_summaries`, made when the spans were
received); `--from-spans` also scores the same window in a second project whose summaries are deleted,
so its traces are read span by span (the window before the summaries), alternated with the others.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent / "tests" / "monitor"))

from production_traces import store_traces

from cobalt_lib import Evaluator, Experiment, load_config
from cobalt_lib.config import Config
from cobalt_lib.monitor import Ingest, monitor, score_window, window_bounds
from cobalt_lib.store import Store

DAY = "2026-11-20"


def evaluators() -> list[Evaluator]:
    return [Evaluator(name="lyon", type="contains", value="Lyon"),
            Evaluator(name="short", type="function", fn=lambda ctx: float(len(str(ctx.output)) < 40))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--traces", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--from-spans", action="store_true", help="also score the window read span by span")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        said = [(f"Where is parcel {i}?", "It is in Lyon." if i % 3 else "I cannot say.") for i in range(args.traces)]
        config, spans_config = (project(Path(tmp) / name, said) for name in ("summaries", "spans"))
        with Store.for_config(spans_config)._transaction() as con:
            con.execute("DELETE FROM trace_summaries")
        items = [{"id": f"t{i}", "input": q, "production": {"output": a}} for i, (q, a) in enumerate(said)]

        def experiment() -> object:  # declared in the timing, as the window's run is (its items checked)
            return Experiment("bench-experiment", items, lambda ctx: ctx.item["production"]["output"],
                              evaluators=evaluators()).run(config=config)

        ratios: list[float] = []
        for repeat in range(args.repeats):  # interleaved, so both sides meet the same load
            # a monitor of its own each repeat: each window is a first scoring, as a daily window's is
            watch = monitor(f"bench-{repeat}", traces={"service.name": "support-bot"}, evaluators=evaluators())
            load = os.getloadavg()[0]
            window = timed(lambda: score_window(watch, DAY, config))  # noqa: B023 (called at once)
            plain = timed(experiment)
            ratios.append(window[1] / plain[1])
            read = ""
            if args.from_spans:
                spans = timed(lambda: score_window(watch, DAY, spans_config))  # noqa: B023
                read = f"; window read span by span {spans[0]:.2f} s, {spans[1]:.2f} CPU-s"
            print(f"repeat {repeat + 1}: window {window[0]:.2f} s, {window[1]:.2f} CPU-s; experiment {plain[0]:.2f} s, "
                  f"{plain[1]:.2f} CPU-s; ratio {window[0] / plain[0]:.2f} wall, {window[1] / plain[1]:.2f} CPU"
                  f"{read} (load {load:.1f})")
        print(f"median CPU ratio {statistics.median(ratios):.2f} over {len(ratios)} repeats")


def timed(work: Callable[[], object]) -> tuple[float, float]:
    """Wall and CPU seconds (this process, all its threads) of `work()`."""
    wall, cpu = time.perf_counter(), time.process_time()
    work()
    return time.perf_counter() - wall, time.process_time() - cpu


def project(root: Path, said: list[tuple[str, str]]) -> Config:
    """A project whose store holds a trace per (question, answer), all in the window `DAY`."""
    root.mkdir()
    (root / "cobalt.toml").write_text("[monitor]\nkeep_days = 0\n", encoding="utf-8")
    config = load_config(root)
    store_traces(Ingest(Store.for_config(config)), said, at_ns=window_bounds(DAY)[0])
    return config


if __name__ == "__main__":
    main()
