"""The browser tier's shared fixtures: one app server and one chromium for every test in tests/browser/,
and a fresh browser context (its own cookies, so its own Streamlit session) for each page.

Both are package-scoped: started by the first browser test that asks, stopped after the last
browser test, so the rest of the suite does not run beside an idle server holding its models.
A module opens its pages with ``new_page(width, height)`` at the size its tests need, most in a
module-scoped ``page`` fixture when its tests walk through one visit, or in the test itself.

What the tests share through the one server: the models it has loaded, its caches and its
upload cache (a page never sees another session's upload: tests/unit/test_uploads.py). A test
that needs the server itself set differently, or a server no browser has visited yet, starts its
own with ``own_server`` and says why.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from harness.browser import chromium_browser, chromium_missing, server_log, streamlit_server


@pytest.fixture(scope="package")
def chromium():
    """One headless chromium for the browser tests (Debian's, through Playwright)."""
    problem = chromium_missing()
    assert problem is None, problem
    with chromium_browser() as browser:
        yield browser


SERVER_LOGS: list[Path] = []  # the shared server's log, appended to the report of a failed test


@pytest.fixture(scope="package")
def app_url():
    """The base URL of the app served once for the browser tests, with this process's environment."""
    with streamlit_server() as url:
        SERVER_LOGS.append(server_log(url))
        yield url
        SERVER_LOGS.clear()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed browser test's report ends with the last lines of the shared server's log: what the
    server said while a page did not come (CI shows the report, not the machine)."""
    report = yield
    if report.failed and SERVER_LOGS:
        try:
            tail = SERVER_LOGS[-1].read_text(encoding="utf-8", errors="replace")[-3000:]
        except OSError as err:
            tail = f"(no server log: {err})"
        report.sections.append(("shared server's log, last 3,000 characters", tail))
    return report


@pytest.fixture(scope="package")
def new_page(chromium):
    """``with new_page(width=1400, height=1000, **context_options) as page``: a page in a fresh
    browser context (no cookies: a new visitor), closed with its context at the end of the block.
    ``context_options`` go to Playwright's ``new_context`` (``device_scale_factor=1.5``, …)."""

    @contextlib.contextmanager
    def open_page(width: int = 1400, height: int = 1000, **context_options):
        context = chromium.new_context(viewport={"width": width, "height": height}, **context_options)
        try:
            yield context.new_page()
        finally:
            context.close()

    return open_page


@pytest.fixture
def own_server():
    """``own_server(**env)``: the base URL of a server of the test's own, started with ``env`` on top
    of this process's environment and stopped after the test. For a test that sets something the
    server reads when it starts (an environment variable), or that needs its first request."""
    with contextlib.ExitStack() as servers:

        def start(**env: str) -> str:
            return servers.enter_context(streamlit_server(env=env))

        yield start
