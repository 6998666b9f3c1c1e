"""Checking one session in every theme (or layout) on one page, as a person switches them live.

A page load of JupyterLab costs Chromium's renderer 4–5 s of CPU, and the agent session a test
scripts costs more again; a test that checks the same states in each theme loads one page, runs
the session once and, at each state, switches the theme (``PanelPage.set_theme``, as
*Settings → Theme* does) and checks every theme there. ``Sweep`` keeps what failed with its
theme (or layout) and state, so one failure hides no other, and says them all at the end; a
step that fails outside a check stops the test as before (what follows would mean nothing).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import final

from e2e_page import THEMES, PanelPage
from playwright.sync_api import Error as PlaywrightError

FORCED_COLORS = "forced-colors"
"""The light theme with the system's forced colours (Windows high contrast), emulated."""

_REMEMBER_FOCUS = "() => { window.__sweepFocus = document.activeElement; }"
_FOCUS_KEPT = "() => document.activeElement === window.__sweepFocus"


@final
class Sweep:
    """The themes of one page, switched live, and the failures of the checks made in each.

    Use as a context manager around the test's steps: on leaving, the theme goes back to light
    (a user setting of the shared server) and the failures kept are raised, each with its
    theme and state."""

    def __init__(self, ui: PanelPage, themes: Sequence[str] = tuple(THEMES)) -> None:
        unknown = [t for t in themes if t not in THEMES and t != FORCED_COLORS]
        assert not unknown, f"no such theme: {unknown}"
        self.ui = ui
        self.themes = list(themes)
        self.failures: list[str] = []
        self.checked: list[str] = []
        self._lab_theme = "light"  # the page's JupyterLab theme (every test starts in light)
        self._forced = False

    @property
    def current(self) -> str:
        return FORCED_COLORS if self._forced else self._lab_theme

    def switch(self, theme: str) -> None:
        """Show the page in *theme* (forced colours: light, with the system's colours forced)."""
        if theme == self.current:
            return
        page = self.ui.page
        if self._forced:
            page.emulate_media(forced_colors="none")
            self._forced = False
        lab_theme = "light" if theme == FORCED_COLORS else theme
        if lab_theme != self._lab_theme:
            self.ui.set_theme(lab_theme)
            self._lab_theme = lab_theme
        if theme == FORCED_COLORS:
            page.emulate_media(forced_colors="active")
            self._forced = True

    def themes_at(self, state: str, *, keep_focus: bool = True) -> Iterator[str]:
        """Switch to each theme in turn and yield it; the order starts with the theme on screen
        when it is the last one (fewer switches). With *keep_focus* (checks that leave the focus
        alone), the focus must afterwards be where it was: switching the theme live must not
        lose a keyboard user's place."""
        order = self.themes[::-1] if self.current == self.themes[-1] else self.themes
        if keep_focus:
            self.ui.page.evaluate(_REMEMBER_FOCUS)
        for theme in order:
            failed = len(self.failures)
            with self.check(theme, state, "switching to it"):
                self.switch(theme)
            if len(self.failures) == failed:  # else its checks would be made in another theme
                yield theme
        if not keep_focus:
            return
        with self.check(state, "after the theme switches"):
            assert self.ui.page.evaluate(_FOCUS_KEPT), (
                f"the focus moved while the theme changed; it is on {self.ui.focused()}"
            )

    @contextmanager
    def check(self, *where: str) -> Iterator[None]:
        """Run one check; if it fails, keep the failure with *where* (theme, layout, state),
        screenshot the page and go on."""
        label = ", ".join(where)
        self.checked.append(label)
        try:
            yield
        except (AssertionError, PlaywrightError) as error:
            self.failures.append(f"{label}: {type(error).__name__}: {error}")
            slug = re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")
            try:
                self.ui.screenshot(f"failed-{self.ui.name[:40]}-{slug}")
            except PlaywrightError as shot:
                print(f"no screenshot of {label}: {shot}")

    def report(self) -> str:
        return f"{len(self.failures)} of {len(self.checked)} checks failed:\n" + "\n".join(
            f"- {failure}" for failure in self.failures
        )

    def __enter__(self) -> Sweep:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        try:
            if not self.ui.page.is_closed():
                self.switch("light")  # the theme is a user setting of the shared server
        except PlaywrightError as reset:
            self.failures.append(f"at the end, setting the theme back to light: {reset}")
        if error is not None:
            if self.failures:  # shown with the test's output (no add_note before Python 3.11)
                print(f"Before the test stopped, {self.report()}")
            return
        assert not self.failures, self.report()
