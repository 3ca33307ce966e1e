"""A real OTLP consumer: every oracle store, pushed by `export --format otel --endpoint` to an Arize
Phoenix server on loopback, read back through Phoenix's REST API. Phoenix starts once for the module
(about 10-20 s here), on free ports, its database in a temporary folder, and is killed at the end."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import zymi_tui_bin
from tests.phoenix_checks import STORES, Phoenix, phoenix_server, push, settled_checks


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phoenix]:
    with phoenix_server(tmp_path_factory.mktemp("phoenix")) as server:
        yield server


@pytest.mark.parametrize("name", STORES)
def test_phoenix_holds_one_rooted_trace_per_run_with_messages_and_tools(phoenix: Phoenix, name: str) -> None:
    proc = push(zymi_tui_bin(), name, phoenix.url)
    assert proc.returncode == 0, proc.stderr
    assert "pushed" in proc.stderr
    got = settled_checks(phoenix.url, name)
    assert [check for check, ok in got.items() if not ok] == []


def test_a_refusing_endpoint_is_one_line_and_exit_2(phoenix: Phoenix, tmp_path: Path) -> None:
    """Phoenix refuses a POST to a path that is no OTLP receiver (405): the export says so on one line."""
    proc = push(zymi_tui_bin(), "memory", phoenix.url + "/not-otlp")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "refused the spans: HTTP 405" in proc.stderr
    assert httpx.get(phoenix.url + "/").status_code == 200  # the server is still up for the other tests
