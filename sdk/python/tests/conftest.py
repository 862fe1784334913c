"""Fixtures of the SDK's tests.

Tests marked ``server`` run against a real ``crucible serve`` named by the
environment (as the lead's harness sets it: ``go test -tags crucible_initexe
-run TestPythonSDK ./e2e`` from the repository root):

* ``CRUCIBLE_URL``: the server's base URL;
* ``CRUCIBLE_API_KEY``: team-a's key; ``CRUCIBLE_TEST_OTHER_API_KEY``: team-b's;
* the server's model is the scripted one (llmtest.OpenAI with FromPrompt).

Without ``CRUCIBLE_URL`` they fail when ``CI`` is set and are skipped otherwise.
The other tests need no server.
"""

from __future__ import annotations

import os
import sys
from typing import Iterator

import pytest

# Import the SDK from this checkout, not from an installed copy.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import crucible  # noqa: E402

HOW = ("set CRUCIBLE_URL, CRUCIBLE_API_KEY and CRUCIBLE_TEST_OTHER_API_KEY to a server with the scripted model: "
       "go test -tags crucible_initexe -run TestPythonSDK ./e2e (from the repository root)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "server: needs a real crucible serve (CRUCIBLE_URL)")


def _need_server() -> None:
    missing = [v for v in ("CRUCIBLE_URL", "CRUCIBLE_API_KEY", "CRUCIBLE_TEST_OTHER_API_KEY") if not os.environ.get(v)]
    if missing:
        msg = f"{', '.join(missing)} not set: {HOW}"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)


@pytest.fixture
def client() -> Iterator[crucible.Client]:
    """A client of the server as team-a."""
    _need_server()
    c = crucible.Client()
    yield c
    c.close()


@pytest.fixture
def other_client() -> Iterator[crucible.Client]:
    """A client of the same server as team-b."""
    _need_server()
    c = crucible.Client(api_key=os.environ["CRUCIBLE_TEST_OTHER_API_KEY"])
    yield c
    c.close()
