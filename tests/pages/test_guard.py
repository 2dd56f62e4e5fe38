"""The pages server refuses other sites: a DNS-rebinding Host reads nothing, and a write needs the
server's own Origin and its CSRF token (issue 22, finding 10)."""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx
import pytest
from pages_project import Served, served  # noqa: F401  (the shared served-project fixture)

from cobalt_lib.pages._guard import allowed_hosts, from_elsewhere


def _port(served: Served) -> int:
    port = urlsplit(served.url).port
    assert port is not None
    return port


def test_a_rebinding_host_gets_421_and_no_stored_output(served: Served) -> None:
    path = f"/api/runs/{served.runs[0]}/items"
    own = httpx.get(served.url + path, timeout=10)
    assert own.status_code == 200 and "answer 1" in own.text  # what the attacker is after
    for host in (f"evil.example:{_port(served)}", "evil.example", f"127.0.0.1:{_port(served) + 1}",
                 f"localhost.evil.example:{_port(served)}"):
        rebound = httpx.get(served.url + path, headers={"Host": host}, timeout=10)
        assert rebound.status_code == 421, host
        assert rebound.text == (f"Misdirected request (another Host): this server answers only "
                                f"http://127.0.0.1:{_port(served)} and its own pages.\n")  # no stored data
    page = httpx.get(served.url + "/", headers={"Host": f"evil.example:{_port(served)}"}, timeout=10)
    assert page.status_code == 421 and "support-bot" not in page.text


@pytest.mark.parametrize("name", ["127.0.0.1", "localhost", "[::1]", "LOCALHOST"])
def test_every_loopback_name_of_the_server_is_answered(served: Served, name: str) -> None:
    answered = httpx.get(served.url + "/healthz", headers={"Host": f"{name}:{_port(served)}"}, timeout=10)
    assert (answered.status_code, answered.text) == (200, "ok")


def test_a_write_from_another_origin_is_403_and_the_own_origin_with_the_token_reaches_the_route(
        served: Served) -> None:
    path = f"/api/runs/{served.runs[0]}/items"
    own_origin = served.url
    client = httpx.Client()
    assert client.get(served.url + "/?session=" + served.session, timeout=10).status_code == 303  # the login link
    token = client.get(served.url + "/api/csrf", timeout=10).json()
    assert token["header"] == "X-CSRF-Token" and len(token["token"]) >= 40
    header = {"X-CSRF-Token": token["token"]}

    foreign = client.post(served.url + path, headers={"Origin": "http://evil.example", **header}, timeout=10)
    assert foreign.status_code == 403 and "another origin" in foreign.text
    no_origin = client.post(served.url + path, headers=header, timeout=10)
    assert no_origin.status_code == 403
    no_token = client.post(served.url + path, headers={"Origin": own_origin}, timeout=10)
    assert no_token.status_code == 403 and "X-CSRF-Token" in no_token.text
    wrong_token = client.post(served.url + path, headers={"Origin": own_origin, "X-CSRF-Token": "x" * 43},
                              timeout=10)
    assert wrong_token.status_code == 403
    no_session = httpx.post(served.url + path, headers={"Origin": own_origin, **header}, timeout=10)
    assert no_session.status_code == 403 and "needs your session" in no_session.text
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        passed = client.request(method, served.url + path, headers={"Origin": own_origin, **header}, timeout=10)
        assert passed.status_code == 405, method  # past the guard: the route itself takes GET only


def test_the_csrf_token_is_not_given_to_another_host(served: Served) -> None:
    refused = httpx.get(served.url + "/api/csrf", headers={"Host": "evil.example"}, timeout=10)
    assert refused.status_code == 421 and "token" not in refused.text


def test_the_host_and_origin_rules() -> None:
    assert allowed_hosts(4001) == {"127.0.0.1:4001", "localhost:4001", "[::1]:4001"}
    assert allowed_hosts(80) >= {"127.0.0.1", "localhost", "[::1]", "localhost:80"}
    assert "[::1]:4001" in allowed_hosts(4001, "::1")
    host = "127.0.0.1:4000"
    assert from_elsewhere({"Origin": "http://evil.example"}, host)
    assert from_elsewhere({"Origin": "null"}, host)
    assert from_elsewhere({"Origin": "http://127.0.0.1:4001"}, host)  # the pages' port is another origin
    assert not from_elsewhere({"Origin": "http://127.0.0.1:4000"}, host)
    assert from_elsewhere({"Sec-Fetch-Site": "cross-site"}, host)
    assert from_elsewhere({"Sec-Fetch-Site": "same-site"}, host)
    assert not from_elsewhere({"Sec-Fetch-Site": "same-origin"}, host)
    assert not from_elsewhere({}, host)  # a script or curl: no browser page behind it
