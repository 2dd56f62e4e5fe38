"""One served project shared by the page tests (a session fixture: the runs take seconds to make):
three runs made with the CLI, and cobalt's pages served in process on a free port."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fakellm import FakeLLM
from pages_project import Served, _judge, make_project

from cobalt_lib import load_config
from cobalt_lib.pages import PagesServer


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory, _llm_server: FakeLLM) -> Iterator[Served]:
    _llm_server.reset()
    _llm_server.respond = _judge
    root = tmp_path_factory.mktemp("pages") / "proj"
    try:
        runs = make_project(root, _llm_server)
    finally:
        _llm_server.reset()  # the judge's script is for these runs alone
    server = PagesServer(load_config(root))
    url = server.start()
    yield Served(root=root, url=url, runs=runs)
    server.stop()
