"""How long a shard keeps a part open: 10 s at first, then a tenth of the attempt's work so far, so a
long shard of slow items writes tens of parts (each three files for `merge` to download), not hundreds."""

from __future__ import annotations

from cobalt_lib.run._shard import PART_SECONDS, part_seconds


def test_a_part_stays_open_ten_seconds_then_a_tenth_of_the_work_before_it() -> None:
    assert PART_SECONDS == 10.0
    assert part_seconds(0.0) == 10.0
    assert part_seconds(99.0) == 10.0
    assert part_seconds(500.0) == 50.0
    assert part_seconds(0.0, minimum=2.0) == 2.0
    assert part_seconds(100.0, minimum=2.0) == 10.0


def test_a_twenty_minute_shard_of_slow_items_writes_tens_of_parts() -> None:
    worked, parts = 0.0, 0
    while worked < 1250.0:  # 25,000 items at 50 ms, no item cap
        worked += part_seconds(worked)
        parts += 1
    assert 30 <= parts <= 40  # every 10 s: 125
