"""The store's writes that never drop a finished item: values over the cap, and the journal on disk."""

from __future__ import annotations

import json

from stores import MakeStore

from cobalt_lib.store._journal import Journal, left, replay_left
from cobalt_lib.store._writer import BatchWriter


def _output(index: int, output: object, **extra: object) -> dict[str, object]:
    return {"run_id": "r1", "item_index": index, "run_index": 0, "status": "ok", "output": output,
            "input": {"input": f"q{index}"}, **extra}


def test_a_value_over_the_cap_is_stored_cut_with_its_length_and_read_back_whole(make_store: MakeStore) -> None:
    store = make_store(max_value_bytes=1024)
    big = {"text": "é" * 5000}  # 10,000 bytes of UTF-8, and JSON around them
    store.write({"outputs": [_output(0, "a"), _output(1, big, traceback="t" * 3000), _output(2, "c")],
                 "scores": [{"run_id": "r1", "item_index": 1, "run_index": 0, "evaluator": "j",
                             "raw_response": "r" * 2000, "status": "ok"}]})
    with store.connect(read_only=True) as con:
        stored = dict(con.execute("SELECT item_index, output FROM outputs").fetchall())
        [(traceback,)] = con.execute("SELECT traceback FROM outputs WHERE item_index = 1").fetchall()
    cut = json.loads(stored[1])
    assert isinstance(cut, str) and len(cut.encode()) <= 1024 + 200  # the head, then the marker
    whole = json.dumps(big, ensure_ascii=False).encode()
    assert f"cut at 1024 of {len(whole)} bytes" in cut and traceback.startswith("t" * 1000)
    assert json.loads(stored[0]) == "a" and json.loads(stored[2]) == "c"
    outputs = store.rows("outputs", "r1")
    assert [o["output"] for o in outputs] == ["a", big, "c"] and outputs[1]["traceback"] == "t" * 3000
    assert store.rows("scores", "r1")[0]["raw_response"] == "r" * 2000
    assert store.item_records("r1", 1)[0]["output"] == big
    assert len(list(store.values_dir.glob("*.json"))) == 3  # content-addressed


def test_a_journal_left_behind_goes_in_once_even_when_part_of_it_went_in_before(make_store: MakeStore) -> None:
    store = make_store()
    store.write({"outputs": [_output(0, "a")]})  # as if the process died between its commit and the unlink
    journal = Journal(store, "dead")
    journal.add({"outputs": [_output(0, "a"), _output(1, "b")],
                 "scores": [{"run_id": "r1", "item_index": 1, "run_index": 0, "evaluator": "j", "status": "ok"}]})
    journal.add({"outputs": [_output(2, "c")]})
    assert replay_left(store) == 0  # its process (here: this journal) still holds it
    journal.close()  # the process ends with the segments on disk
    assert [p.name for p in left(store)] == ["dead"]
    assert replay_left(store) == 2
    assert [(o["item_index"], o["output"]) for o in store.rows("outputs", "r1")] == [(0, "a"), (1, "b"), (2, "c")]
    assert len(store.rows("scores", "r1")) == 1
    assert left(store) == []


def test_a_writer_leaves_an_empty_journal_nowhere(make_store: MakeStore) -> None:
    store = make_store()
    writer = BatchWriter(store, max_delay=0.01)
    for index in range(50):
        writer.add("outputs", _output(index, str(index)))
    writer.close()
    assert len(store.rows("outputs", "r1")) == 50
    assert left(store) == []
