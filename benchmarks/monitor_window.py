"""A monitor's window of 1,000 sampled traces scored (`score_window`: the traces read from the store, their
outputs replayed) against an experiment of the same 1,000 items with the same evaluators (its agent returning
the same outputs): the goal of issue 39 is the window within 1.1x the experiment's time.

    .venv/bin/python benchmarks/monitor_window.py --traces 1000 --repeats 3
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent / "tests" / "monitor"))

from production_traces import store_traces

from cobalt_lib import Evaluator, Experiment, load_config
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
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "cobalt.toml").write_text("[monitor]\nkeep_days = 0\n", encoding="utf-8")
        config = load_config(root)
        said = [(f"Where is parcel {i}?", "It is in Lyon." if i % 3 else "I cannot say.") for i in range(args.traces)]
        store_traces(Ingest(Store.for_config(config)), said, at_ns=window_bounds(DAY)[0])
        watch = monitor("bench", traces={"service.name": "support-bot"}, evaluators=evaluators())
        items = [{"id": f"t{i}", "input": q, "production": {"output": a}} for i, (q, a) in enumerate(said)]
        experiment = Experiment("bench-experiment", items, lambda ctx: ctx.item["production"]["output"],
                                evaluators=evaluators())
        for repeat in range(args.repeats):  # interleaved, so both sides meet the same load
            load = os.getloadavg()[0]
            started = time.perf_counter()
            result = score_window(watch, DAY, config)
            window = time.perf_counter() - started
            started = time.perf_counter()
            experiment.run(config=config)
            plain = time.perf_counter() - started
            assert result.traces == args.traces, result
            print(f"repeat {repeat + 1}: window {window:.2f} s, experiment {plain:.2f} s, ratio {window / plain:.2f} "
                  f"(load {load:.1f})")


if __name__ == "__main__":
    main()
