"""Fixtures of the browser tests: Chromium, a real ``jupyter lab`` per configuration, one page.

- The browser is Debian's ``/usr/bin/chromium`` driven by Python ``playwright`` (never a
  downloaded one), one per module, or one for the run when it holds browser tests only
  (``_browser_scope``). Missing browser or axe-core: the tests fail in CI (``CI`` set) and are
  skipped locally with the reason; ``scripts/e2e-deps`` installs both.
- A ``jupyter lab`` subprocess (``e2e_lab.LabServer``) whose model is a ``FakeAnthropic`` in
  this process answering from the module's ``e2e_model.ScriptedModel``. A module can set
  ``LAB_USER_SETTINGS`` (JupyterLab user settings), ``LAB_AAEP`` (traitlets) and
  ``LAB_DISABLED_PLUGINS`` (JupyterLab plugins turned off), and ``SCENARIOS`` (its scripted
  model's keyword → scenario table, ``e2e_model.ScriptedModel``; the shared scenarios without
  it); modules with the same ``LAB_AAEP`` share one lab for the session (``_shared_labs``),
  each with its own user settings, plugins and scenarios. A module with a ``model`` fixture of its own
  gets its own lab (and pays a JupyterLab start and a first page load on a new origin, about
  10 s of the machine's CPU more than a load on a lab the page already knows).
- One browser context and one page (``_SharedPage``), which each test loads on
  its own copy of the demo notebook, so every test has its own chat and kernel; the page is
  left blank and what it stored is cleared after each test. The kernel starts before the page
  loads and the page adopts it (checked after each test, ``_assert_one_kernel``; why in
  ``LabServer.start_kernel``). Failing tests leave a
  screenshot in ``test-output/e2e``.
- ``E2E_TIMING=1`` (with ``-s``) prints where each test's time went: the kernel start, the page
  load, the notebook's first cell, the panel, the test's own steps and the teardown; and how
  long each chat WebSocket took to open, and how many SSE streams the panel opened meanwhile.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from e2e_lab import LabServer
from e2e_model import ScriptedModel
from e2e_page import AXE, OUTPUT, PanelPage

from jupyter_aaep.testing.fake_anthropic import FakeAnthropic

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]
VIEWPORT = {"width": 1400, "height": 900}
CONFIRMATION_TIMEOUTS = {"low": 60, "medium": 90, "high": 90}
"""Short enough that a request a failed test leaves behind soon takes its default."""


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _missing(what: str) -> None:
    message = f"{what} Run scripts/e2e-deps to install it."
    if _in_ci():
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def _panel_installed() -> bool:
    """Whether JupyterLab will load the panel: its built extension is where Lab looks."""
    from jupyter_core.paths import jupyter_path

    return any(
        Path(d, "labextensions", "jupyter-aaep", "package.json").exists() for d in jupyter_path()
    )


def _browser_scope(fixture_name: str, config: pytest.Config) -> str:
    """``session`` when the run holds browser tests only (as the browser layers of
    ``scripts/test`` do), else ``module``.

    Playwright's sync API keeps an event loop of its own on the main thread while it runs,
    which breaks the pytest-jupyter tests that run after this folder in one process (their
    server loop never gets to clean up): a run with other tests closes Chromium after each
    module. A run of browser tests only keeps one Chromium and one page (``_SharedPage``) for
    all its modules, which spares a browser start and a cold renderer per module."""
    here = Path(__file__).resolve().parent
    start = config.invocation_params.dir
    paths = [(start / str(arg).split("::")[0]).resolve() for arg in config.args]
    only_here = bool(paths) and all(p == here or here in p.parents for p in paths)
    return "session" if only_here else "module"


@pytest.fixture(scope=_browser_scope)
def browser() -> Iterator[Any]:
    """Chromium (``_browser_scope`` says for how long); launching takes about a second."""
    if not CHROMIUM.exists():
        _missing(f"Chromium is not installed at {CHROMIUM} (apt-get install -y chromium).")
    if not AXE.exists():
        _missing(f"axe-core is missing ({AXE}); run 'jlpm install' in labextension/.")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("The playwright Python package is not installed.")
    if not _panel_installed():
        pytest.fail(
            "The jupyter-aaep panel is not built or not installed: run 'pip install -e .' "
            "(or 'cd labextension && jlpm build' then 'jupyter labextension develop --overwrite .').",
            pytrace=False,
        )

    # Never let playwright fetch a browser of its own.
    os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        yield chromium
        chromium.close()


@dataclass
class _Shared:
    """A fake model and the ``jupyter lab`` pointed at it, for modules of one configuration."""

    fake: FakeAnthropic
    responder: _Responder
    server: LabServer | None = None


class _Responder:
    """The shared fake's responder: the ``ScriptedModel`` of the module that runs now."""

    def __init__(self) -> None:
        self.scripted = ScriptedModel()

    def __call__(self, request: Any) -> Any:
        return self.scripted(request)


def _configuration(module: Any) -> str:
    """What makes a module's lab differ from another's (the key of a shared lab): the server's
    traitlets. User settings and turned-off plugins are read at each page load, so a module
    sets its own on a shared lab (``LabServer.reset_user_state``)."""
    return json.dumps(getattr(module, "LAB_AAEP", {}), sort_keys=True)


def _last_of_configuration(request: pytest.FixtureRequest) -> bool:
    """Whether no later module of this run has this module's configuration (then its shared
    lab and fake stop now, not with the session: a plain ``pytest`` goes on to other folders)."""
    key = _configuration(request.module)
    here = Path(__file__).parent
    after = False
    for item in request.session.items:
        module = getattr(item, "module", None)
        if module is request.module:
            after = True
        elif (
            after
            and here in item.path.parents
            and not hasattr(module, "model")  # a module with its own fake has its own lab
            and _configuration(module) == key
        ):
            return False
    return True


@pytest.fixture(scope="session")
def _shared_labs() -> Iterator[dict[str, _Shared]]:
    """Labs shared by the modules of one configuration, for the whole session.

    Starting and stopping ``jupyter lab`` costs about 7 s a module on this machine under load.
    Each test still has its own notebook, chat and kernel; a module that takes over a lab gets
    fresh user settings and workspaces and a fresh ``ScriptedModel`` (``model``). A module that
    brings its own ``model`` fixture (another fake) gets a lab of its own, as before.
    """
    shared: dict[str, _Shared] = {}
    yield shared
    for entry in shared.values():
        if entry.server is not None:
            entry.server.stop()
        entry.fake.stop()


@pytest.fixture(scope="module")
def model(
    request: pytest.FixtureRequest, _shared_labs: dict[str, _Shared]
) -> Iterator[tuple[FakeAnthropic, ScriptedModel]]:
    key = _configuration(request.module)
    entry = _shared_labs.get(key)
    if entry is None:
        responder = _Responder()
        entry = _shared_labs[key] = _Shared(FakeAnthropic(responder=responder).start(), responder)
    entry.fake.reset()  # a fresh fake for this module: no requests, problems or stalls
    scripted = entry.responder.scripted = ScriptedModel(getattr(request.module, "SCENARIOS", None))
    yield entry.fake, scripted
    entry.fake.release()  # nothing this module stalled holds the next one up
    if _last_of_configuration(request):
        del _shared_labs[key]
        entry.fake.stop()
    assert entry.fake.problems == [], entry.fake.problems


@pytest.fixture(scope="module")
def fake_model(model: tuple[FakeAnthropic, ScriptedModel]) -> FakeAnthropic:
    return model[0]


@pytest.fixture(scope="module")
def lab(
    request: pytest.FixtureRequest,
    browser: Any,
    model: tuple[FakeAnthropic, ScriptedModel],
    _shared_labs: dict[str, _Shared],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[LabServer]:
    """A ``jupyter lab`` for this module (shared with the modules of the same configuration,
    see ``_shared_labs``); its log is kept in test-output/e2e."""
    fake, _ = model
    name = request.module.__name__.rsplit(".", 1)[-1]
    settings = getattr(request.module, "LAB_USER_SETTINGS", {})
    plugins = getattr(request.module, "LAB_DISABLED_PLUGINS", [])
    entry = _shared_labs.get(_configuration(request.module))
    shared = entry is not None and entry.fake is fake
    if entry is not None and shared and entry.server is not None:
        entry.server.reset_user_state(settings, plugins)
        _timing(f"lab reused {name}")
        yield entry.server
        _stop_if_last(request, entry)
        return
    server = LabServer(
        home=tmp_path_factory.mktemp(f"lab-{name}"),
        model_url=fake.base_url,
        api_key=fake.api_key,
        log_path=OUTPUT / f"{name}{'-shared' if shared else ''}.server.log",
        aaep={
            "confirmation_timeouts": CONFIRMATION_TIMEOUTS,
            "clarification_timeout": 120,
            **getattr(request.module, "LAB_AAEP", {}),
        },
        user_settings=settings,
        disabled_plugins=plugins,
    )
    began = time.monotonic()
    if entry is not None and shared:
        try:
            server.start()
        except BaseException:
            server.stop()
            raise
        entry.server = server  # stopped after the last module that shares it (or the session)
        _timing(f"lab start {name}: {time.monotonic() - began:.2f}")
        yield server
        _stop_if_last(request, entry)
        return
    try:
        server.start()
        _timing(f"lab start {name}: {time.monotonic() - began:.2f}")
        yield server
    finally:
        began = time.monotonic()
        server.stop()
        _timing(f"lab stop {name}: {time.monotonic() - began:.2f}")


def _stop_if_last(request: pytest.FixtureRequest, entry: _Shared) -> None:
    if entry.server is not None and _last_of_configuration(request):
        server, entry.server = entry.server, None
        began = time.monotonic()
        server.stop()
        _timing(
            f"lab stop (shared) after {request.module.__name__}: {time.monotonic() - began:.2f}"
        )


def _timing(line: str) -> None:
    if os.environ.get("E2E_TIMING"):
        print(f"\nE2E_TIMING {line}")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Any:
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture(scope=_browser_scope)
def browser_context(browser: Any) -> Iterator[Any]:
    """The browser's context, whose HTTP cache spares each test fetching all of JupyterLab's
    scripts from the server again."""
    context = browser.new_context(viewport=VIEWPORT, reduced_motion="reduce")
    yield context
    context.close()


class _SharedPage:
    """The page the tests take in turn (of a module, or of the run: ``_browser_scope``).

    A new page is a new renderer process, which compiles all of JupyterLab's scripts again:
    a page load cost 7.5-8 s of the machine's CPU on a new page and 4.3-4.7 s on the page the
    test before left (measured here, ``jupyter lab`` and every Chromium process counted). A
    test still meets nothing of the one before: the page leaves for ``about:blank``, which
    unloads JupyterLab, and what the origin stored is cleared (``_clear_origin``); its size
    and emulated media go back to the first ones.
    """

    def __init__(self, context: Any) -> None:
        self.context = context
        self.page: Any = None

    def take(self) -> Any:
        if self.page is None or self.page.is_closed():
            self.page = self.context.new_page()
        return self.page

    @contextmanager
    def lent(self, lab: LabServer, name: str) -> Iterator[PanelPage]:
        """The page as a ``PanelPage`` named *name*, for a scenario a module fixture runs;
        handed back (kernels shut down) when the scenario ends."""
        ui = PanelPage(self.take(), lab, name)
        try:
            yield ui
        finally:
            ui.detach()
            self.hand_back(lab.url.rstrip("/"))
            lab.shutdown_kernels()

    def hand_back(self, origin: str) -> None:
        """Leave the page blank for the next test; a page that cannot is closed instead."""
        page = self.page
        try:
            page.goto("about:blank", timeout=15_000)
            _clear_origin(page, origin)
            page.set_viewport_size(VIEWPORT)
            page.emulate_media(forced_colors="null", reduced_motion="reduce")
        except Exception as error:  # noqa: BLE001 - a stuck or crashed page: the next gets a new one
            print(f"the page could not be reused ({error}); the next test gets a new one")
            page.close()


@pytest.fixture(scope=_browser_scope)
def shared_page(browser_context: Any) -> Iterator[_SharedPage]:
    pages = _SharedPage(browser_context)
    yield pages
    if pages.page is not None and not pages.page.is_closed():
        pages.page.close()


def _clear_origin(page: Any, origin: str) -> None:
    """Forget everything *origin* stored in the browser but its cookies and the HTTP cache."""
    session = page.context.new_cdp_session(page)
    try:
        session.send(
            "Storage.clearDataForOrigin",
            {
                "origin": origin,
                "storageTypes": "local_storage,indexeddb,websql,service_workers,cache_storage,"
                "file_systems,shader_cache",
            },
        )
    finally:
        session.detach()


def _assert_one_kernel(panel_page: PanelPage) -> None:
    """The page ran on the kernel started before it loaded, not on one more of its own (else
    the tests would drive a kernel other than the one the harness started and stops)."""
    if panel_page.kernel_id is None:
        return
    kernels = panel_page.lab.kernels_of(panel_page.notebook)
    assert kernels == [panel_page.kernel_id], (
        f"the notebook ran on {kernels}, not only on the kernel started for it "
        f"({panel_page.kernel_id})"
    )


@pytest.fixture
def ui(
    request: pytest.FixtureRequest, browser: Any, shared_page: _SharedPage, lab: LabServer
) -> Iterator[PanelPage]:
    """The shared page (``_SharedPage``) for a fresh copy of the demo notebook (not opened
    yet). A rerun of a failed test, and a test marked ``own_page`` (it adds an init script,
    which would stay on the page), get a browser context of their own: nothing they store,
    even while their page closes, reaches the shared page's origin."""
    slug = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:60]
    attempt = getattr(request.node, "execution_count", 1)
    began = time.monotonic()
    own_context = None
    if attempt > 1:
        slug = f"{slug[:52]}-retry-{attempt}"  # a rerun meets nothing of the failed try
    if attempt > 1 or request.node.get_closest_marker("own_page"):
        own_context = browser.new_context(viewport=VIEWPORT, reduced_motion="reduce")
        page = own_context.new_page()
    else:
        page = shared_page.take()
    panel_page = PanelPage(page, lab, slug)
    panel_page.notebook = lab.notebook(f"{slug}.ipynb")
    panel_page.phases["context"] = time.monotonic() - began
    began = time.monotonic()
    try:
        yield panel_page
    finally:
        panel_page.phases["test body"] = (
            time.monotonic()
            - began
            - sum(v for k, v in panel_page.phases.items() if k != "context")
        )
        began = time.monotonic()
        report = getattr(request.node, "report_call", None)
        if report is not None and report.failed:
            try:
                panel_page.screenshot(f"failed-{slug}")
            except Exception as error:  # noqa: BLE001 - a screenshot must not hide the failure
                print(f"no screenshot of the failure: {error}")
        panel_page.collect_socket_waits()
        panel_page.detach()
        if own_context is None:
            shared_page.hand_back(lab.url.rstrip("/"))
        else:
            own_context.close()
        began = panel_page._phase("context close", began)
        try:
            _assert_one_kernel(panel_page)
        finally:
            lab.shutdown_kernels()
        panel_page._phase("kernel shutdown", began)
        if os.environ.get("E2E_TIMING"):
            phases = ", ".join(f"{k} {v:.2f}" for k, v in panel_page.phases.items())
            waits = ", ".join(
                f"{w} ms" if w is not None else "never" for w in panel_page.socket_waits
            )
            print(
                f"\nE2E_TIMING {request.node.nodeid}: {phases}; chat sockets opened in {waits or '-'}"
                f" after their creation; SSE streams: {len(panel_page.sse_streams)}"
            )
