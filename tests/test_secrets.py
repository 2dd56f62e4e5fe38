"""The one redaction (`cobalt_lib._secrets`): every secret the process knows, in every form a server can echo it
back in, is replaced wherever text leaves the process; URLs are shown without user info or query."""

from __future__ import annotations

import base64
import json
import logging
from urllib.parse import quote, quote_plus

import pytest

from cobalt_lib import ConfigError
from cobalt_lib._secrets import ScrubbingFilter, safe_url, scrub, scrub_loggers
from cobalt_lib.config._config import JudgeConfig
from cobalt_lib.llm import redact, resolve_judge


@pytest.mark.parametrize("value", ["SECRET+plus+key", "SECRET%2Bpct%2Bkey", "SECRET-ünï-cödé-key", "SECRET a space"])
def test_a_base_url_query_value_is_scrubbed_whatever_its_characters(value: str,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    written = value.replace(" ", "+")
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://judge.example/v1?key={written}")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-SECRET-key-0123456789")
    endpoint = resolve_judge(JudgeConfig())
    decoded = written.replace("+", " ") if "%" not in written else written.replace("%2B", "+")
    echoes = [written, decoded, quote(decoded, safe=""), quote_plus(decoded), json.dumps(decoded)[1:-1],
              json.dumps(decoded, ensure_ascii=True)[1:-1]]
    for echo in echoes:
        assert redact(f"you sent key={echo}!", endpoint) == "you sent key=***!", echo
        assert scrub(f"you sent key={echo}!") == "you sent key=***!", echo  # known to the whole process


def test_a_proxys_credentials_are_scrubbed_plain_percent_encoded_and_as_a_basic_header(
        monkeypatch: pytest.MonkeyPatch) -> None:
    password = "pw/SECRET+proxy:16180"
    monkeypatch.setenv("HTTPS_PROXY", f"http://puser:{quote(password, safe='')}@proxy.example:3128")
    basic = base64.b64encode(f"puser:{password}".encode()).decode()
    echo = (f"407 for Proxy-Authorization: Basic {basic}; password {password} ({quote(password, safe='')}, "
            f"{quote_plus(password)}); url http://puser:{quote(password, safe='')}@proxy.example:3128")
    assert scrub(echo) == ("407 for Proxy-Authorization: Basic ***; password *** (***, ***); "
                           "url http://puser:***@proxy.example:3128")


def test_a_message_never_carries_a_token_of_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_SECRETtoken0123456789")
    error = ConfigError("GitHub answered 401: Bad credentials ghs_SECRETtoken0123456789")
    assert str(error) == "GitHub answered 401: Bad credentials ***"
    assert "ghs_SECRET" not in f"{error}" and "ghs_SECRET" not in str([str(error)])


def test_short_values_and_ordinary_variables_are_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_TOKEN", "short")  # too short to be told from ordinary words
    monkeypatch.setenv("EDITOR", "vim-editor-setting")
    assert scrub("short vim-editor-setting") == "short vim-editor-setting"


def test_safe_url_shows_no_user_info_query_or_fragment() -> None:
    assert safe_url("https://u:p@h.example:8443/v1?key=a+b#frag") == "https://h.example:8443/v1"
    assert safe_url("https://hooks.example/T0/secret-path", path=False) == "https://hooks.example/…"


def test_the_opentelemetry_sdks_log_records_are_scrubbed(monkeypatch: pytest.MonkeyPatch,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector.example:4318/?token=SECRET-otlp-14142")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20SECRET-otlp-header-2718")
    logger = logging.getLogger("opentelemetry.exporter.otlp.common.http")
    scrub_loggers("opentelemetry")
    assert any(isinstance(f, ScrubbingFilter) for f in logger.filters)
    with caplog.at_level(logging.WARNING):
        try:
            raise ConnectionError("Max retries exceeded with url: /?token=SECRET-otlp-14142/v1/logs")
        except ConnectionError as exc:
            logger.warning("Transient error %s encountered while exporting logs batch (%s)", exc,
                           "Bearer SECRET-otlp-header-2718", exc_info=True)
    assert "SECRET" not in caplog.text and "url: /?token=***/v1/logs" in caplog.text


def test_the_rows_and_the_judges_scrubbers_are_each_made_once_and_follow_the_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from cobalt_lib._secrets import scrubber

    monkeypatch.setenv("OPENAI_API_KEY", "sk-SECRET-key-0123456789")
    endpoint = resolve_judge(JudgeConfig(api_key="judge-key-9876543210"))
    rows, judge = scrubber(), scrubber(*endpoint.secrets)
    # asked in turn, as a run asks per item: each kept, not rebuilt by the other (issue 35's regression)
    again = scrubber(), scrubber(*endpoint.secrets), scrubber()
    assert again[0] is rows and again[1] is judge and again[2] is rows and judge is not rows
    assert judge("judge-key-9876543210 sk-SECRET-key-0123456789") == "*** ***"
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-NEW-token-0000000001")
    changed = scrubber()
    assert changed is not rows and changed("ghp-NEW-token-0000000001") == "***"
    monkeypatch.delenv("GITHUB_TOKEN")
    assert scrubber()("ghp-NEW-token-0000000001") == "ghp-NEW-token-0000000001"
