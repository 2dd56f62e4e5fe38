"""Samples files and model routing."""

from __future__ import annotations

from pathlib import Path

import pytest

from cobalt_lib import ConfigError, DatasetError
from cobalt_lib.grading.graders import canonical_model, load_samples, route_model


def test_samples_keys_ids_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text('{"userMessage": "q", "assistantResponse": "a", "score": -3}\n\n'
                    '{"user_message": "q2", "assistant_response": {"k": 1}, "id": 7, "metadata": {"m": 1}}\n')
    first, second = load_samples(path)
    assert (first.id, first.score, first.user_message) == ("1", -3, "q")
    assert (second.id, second.score, second.assistant_response, second.metadata) == ("7", None, {"k": 1}, {"m": 1})
    for line, message in [('{"userMessage": "q", "assistantResponse": "a", "score": 5}', "score 5 must be an integer"),
                          ('{"userMessage": "q", "assistantResponse": "a", "score": 1.5}', "score 1.5 must be"),
                          ('{"userMessage": "q"}', "missing 'assistantResponse'"),
                          ("[1]", "must be a JSON object"), ("{oops", "not valid JSON")]:
        path.write_text('{"userMessage": "q", "assistantResponse": "a"}\n' + line + "\n")
        with pytest.raises(DatasetError, match=rf"s.jsonl:2: .*{message}"):
            load_samples(path)
    path.write_text('{"userMessage": "q", "assistantResponse": "a", "id": "x"}\n' * 2)
    with pytest.raises(DatasetError, match="id 'x' is already used on line 1"):
        load_samples(path)


def test_every_bad_line_of_a_samples_file_is_named_at_once(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text('{"userMessage": "q", "assistantResponse": "a", "id": "x"}\n{oops\n'
                    '{"userMessage": "q", "assistantResponse": "a", "score": 5}\n'
                    '{"userMessage": "q", "assistantResponse": "a", "id": "x"}\n')
    with pytest.raises(DatasetError) as raised:
        load_samples(path)
    assert str(raised.value).splitlines() == [
        f"3 bad lines in {path}:",
        f"{path}:2: not valid JSON (Expecting property name enclosed in double quotes, column 2).",
        f"{path}:3: score 5 must be an integer from -3 to 3 (or left out).",
        f"{path}:4: id 'x' is already used on line 1; ids must be unique."]


def test_model_routing(monkeypatch: pytest.MonkeyPatch) -> None:
    assert route_model("openai/gpt-4o", "openai") == ("openai", "gpt-4o")
    assert route_model("anthropic/claude-sonnet-4-5", "openai") == ("anthropic", "claude-sonnet-4-5")
    assert route_model("openai/gpt-4o", "openrouter") == ("openrouter", "openai/gpt-4o")
    with pytest.raises(ConfigError, match="set OPENROUTER_API_KEY"):
        route_model("meta-llama/llama-3-70b", "openai")
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-test")
    assert route_model("meta-llama/llama-3-70b", "openai") == ("openrouter", "meta-llama/llama-3-70b")
    assert route_model("anthropic/claude-sonnet-4-5", "anthropic") == ("openrouter", "anthropic/claude-sonnet-4-5")
    assert canonical_model("openrouter/openai/gpt-4o") == canonical_model("openai/gpt-4o") == "openai/gpt-4o"
