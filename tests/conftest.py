"""Every AAEP event any test produces is checked against the official JSON Schemas and the
project's sequence checker as it is published; the first invalid event fails the test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jupyter_aaep.aaep.check import SequenceChecker, SequenceViolation
from jupyter_aaep.aaep.emitter import Emitter
from jupyter_aaep.testing.schemas import SchemaValidator, SchemaViolation


@pytest.fixture(scope="session")
def aaep_schema_validator() -> SchemaValidator:
    # The schemas shipped in jupyter_aaep/aaep/schemas, or $AAEP_SCHEMA_DIR. Raises
    # FileNotFoundError when they are missing: CI must fail, never skip.
    return SchemaValidator.from_dir(
        profile="jupyter-aaep"
    )  # our producer profile, stricter than the spec


@pytest.fixture(autouse=True)
def aaep_event_audit(request, monkeypatch, aaep_schema_validator):
    """Validate each published event; at teardown, every session must have ended."""
    checker = SequenceChecker()
    failures: list[Exception] = []
    original = Emitter.publish

    def audited_publish(self: Emitter, event: dict) -> None:
        if "@context" in event:
            try:
                aaep_schema_validator.validate(event)
                checker.feed(event)
            except (SchemaViolation, SequenceViolation) as error:
                failures.append(error)
                raise
        original(self, event)

    monkeypatch.setattr(Emitter, "publish", audited_publish)
    yield checker
    if failures:
        pytest.fail(f"invalid AAEP event: {failures[0]}", pytrace=False)
    if request.node.get_closest_marker("open_sessions") is None:
        try:
            checker.finish()
        except SequenceViolation as error:
            pytest.fail(f"AAEP session left open: {error}", pytrace=False)


def pytest_unconfigure(config: pytest.Config) -> None:
    """Guard against a hang at interpreter exit (seen once in ~30 runs, after all tests had
    passed): if the process is still alive 30 s after pytest finished, print every thread's
    stack so the culprit can be found, and exit with pytest's own status."""
    import faulthandler
    import os
    import sys
    import threading
    import time

    status = getattr(config, "_aaep_exitstatus", 0)

    def watchdog() -> None:
        time.sleep(30)
        print(
            "\npytest finished but the interpreter did not exit within 30 s; thread stacks:",
            file=sys.stderr,
        )
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        sys.stderr.flush()
        os._exit(int(status))

    threading.Thread(target=watchdog, name="exit-watchdog", daemon=True).start()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    session.config._aaep_exitstatus = exitstatus  # type: ignore[attr-defined]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """In CI, a test that fails is run once more (pytest-rerunfailures), with fresh function
    fixtures (a browser test: a fresh notebook, chat and browser context), as JupyterLab's own
    Playwright suite retries once in CI. The layers run side by side on 2 cores, where Chromium,
    servers and kernels time out now and then. A rerun is never silent: pytest's summary lists
    each one and ``scripts/run_layers.py`` names them after its table. Locally nothing is
    retried, so a flaky test is seen and fixed."""
    if os.environ.get("CI", "").strip().lower() in ("", "0", "false", "no"):
        return
    browser = Path(__file__).parent / "e2e"
    for item in items:
        delay = 5 if browser in item.path.parents else 2
        item.add_marker(pytest.mark.flaky(reruns=1, reruns_delay=delay))


_CONFIG: list[pytest.Config] = []


def pytest_configure(config: pytest.Config) -> None:
    _CONFIG.append(config)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """A failed try that CI runs again is printed in full: pytest-rerunfailures keeps only the
    last try's traceback, and the first one is the race to find."""
    if report.outcome != "rerun" or not _CONFIG:
        return
    terminal = _CONFIG[0].pluginmanager.getplugin("terminalreporter")
    if terminal is not None:
        terminal.write_sep("-", f"failed once, run again: {report.nodeid} ({report.when})")
        text = report.longreprtext
        # The head holds the test's own frame, the tail the error; a page snapshot in between
        # can be long.
        terminal.write_line(text if len(text) <= 9000 else f"{text[:3000]}\n[…]\n{text[-6000:]}")


class _ModuleCost:
    """Each test module's CPU (this process and every process it started and waited for: servers,
    kernels, browsers) and wall time, measured from its first setup to its last teardown, so the
    module fixtures count; the costliest are listed at the end, as ``--durations`` lists tests.
    CPU, not wall time, decides how much the 2-core machines can run side by side."""

    def __init__(self) -> None:
        self.started: tuple[float, float] | None = None
        self.costs: dict[str, tuple[float, float]] = {}

    @staticmethod
    def _now() -> tuple[float, float]:
        import resource
        import time

        own, waited = (
            resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
        )
        cpu = own.ru_utime + own.ru_stime + waited.ru_utime + waited.ru_stime
        return cpu, time.monotonic()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if self.started is None:
            self.started = self._now()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item, nextitem: pytest.Item | None):
        yield
        if self.started is not None and (nextitem is None or nextitem.path != item.path):
            cpu, wall = self._now()
            name = item.nodeid.split("::", 1)[0]
            spent, took = self.costs.get(name, (0.0, 0.0))
            self.costs[name] = (spent + cpu - self.started[0], took + wall - self.started[1])
            self.started = None

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.costs:
            return
        total = sum(cpu for cpu, _ in self.costs.values())
        terminalreporter.write_sep("=", f"costliest 15 modules by CPU ({total / 60:.1f} CPU min)")
        ranked = sorted(self.costs.items(), key=lambda kv: -kv[1][0])
        for name, (cpu, wall) in ranked[:15]:
            terminalreporter.write_line(f"{cpu:8.1f}s CPU {wall:8.1f}s wall  {name}")


def pytest_sessionstart(session: pytest.Session) -> None:
    if session.config.pluginmanager.get_plugin("aaep-module-cost") is None:
        session.config.pluginmanager.register(_ModuleCost(), "aaep-module-cost")
