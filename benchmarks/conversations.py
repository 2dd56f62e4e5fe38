"""What a conversation costs cobalt per turn: the driver over a no-op agent, and the simulated user replayed.

Three runs in this process, each a fresh project in a temporary directory (store and cache on disk, as
a user's runs are), timed on the run alone (wall and CPU):

- `single`: N*T single-turn items, a no-op async agent: cobalt's cost per agent call today.
- `scripted`: N scripted conversations of T turns, the same agent: the cost per turn of the driver
  (the transcript grows by a turn; the agent gets the conversation so far).
- `simulated-replay`: N simulated conversations of T turns whose simulated user answers come from the
  cache (a first run against the loopback server `tests/fakellm.py` fills it): the cost per turn of a
  replay, cache lookups included; the server's request count proves no call was made.

    .venv/bin/python benchmarks/conversations.py                 # N=200 conversations x T=5 turns
    .venv/bin/python benchmarks/conversations.py --n 500 --turns 10
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


async def agent(ctx: Any) -> str:
    return f"answer {getattr(ctx, 'turn', 0)}"


def timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    value = fn()
    return value, time.perf_counter() - wall, time.process_time() - cpu


def run(name: str, items: list[dict[str, Any]], root: Path) -> Any:
    from cobalt_lib import experiment, load_config

    return experiment(name, items, agent, concurrency=20).run(config=load_config(root))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200, help="conversations")
    parser.add_argument("--turns", type=int, default=5, help="turns per conversation")
    args = parser.parse_args()
    os.environ.setdefault("COBALT_DAGSTER_RECORD", "off")
    from fakellm import FakeLLM, Reply, text

    n, t = args.n, args.turns

    def respond(kind: str, body: dict[str, Any]) -> Reply:
        prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
        return text(json.dumps({"message": f"user message {prompt.count(chr(10) + 'assistant: ')}", "done": False}))

    server = FakeLLM().start()
    server.respond = respond
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            (root / "cobalt.toml").write_text(f'[judge]\nprovider = "openai"\nmodel = "gpt-4o-mini"\n'
                                              f'base_url = "{server.openai_url}"\n[dagster]\nrecord = "off"\n')
            single = [{"input": f"q{i}"} for i in range(n * t)]
            scripted = [{"conversation": {"turns": [f"c{i} turn {k}" for k in range(t)]}} for i in range(n)]
            simulated = [{"conversation": {"goal": f"goal {i}", "max_turns": t}} for i in range(n)]
            run("warm-up", single[:50], root)
            for name, items in (("single", single), ("scripted", scripted)):
                _, wall, cpu = timed(lambda items=items, name=name: run(name, items, root))
                rows.append((name, n * t, wall, cpu))
            run("simulated", simulated, root)  # fills the simulated user's cache
            before = server.count("chat")
            _, wall, cpu = timed(lambda: run("simulated", simulated, root))
            assert server.count("chat") == before, "the replay asked the simulated user"
            rows.append(("simulated-replay", n * t, wall, cpu))
    finally:
        server.stop()
    print(f"{n} conversations x {t} turns ({n * t} agent calls per run), concurrency 20")
    print(f"{'run':<18}{'wall s':>9}{'cpu s':>9}{'wall/call':>12}{'cpu/call':>12}")
    for name, calls, wall, cpu in rows:
        print(f"{name:<18}{wall:>9.2f}{cpu:>9.2f}{wall / calls * 1000:>10.3f}ms{cpu / calls * 1000:>10.3f}ms")


if __name__ == "__main__":
    main()
