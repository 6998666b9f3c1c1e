"""What listeners hear about a cell run (docs/NARRATION.md §5), without a kernel: the status,
the first line of output or the error line, the whole output in the detailed text, secrets
masked, the kernel by its language."""

from __future__ import annotations

import time
from typing import Any

import pytest

from jupyter_aaep.notebook._sessions import KernelInfo
from jupyter_aaep.notebook.executor import ExecutionResult
from jupyter_aaep.notebook.service import CellRun
from jupyter_aaep.tools._run_text import heard_run, kernel_language

pytestmark = pytest.mark.shared_server

KERNEL = KernelInfo(
    kernel_id="k", name="python3", display_name="Python 3 (ipykernel)", execution_state="idle"
)


def run(outputs: list[dict[str, Any]], elapsed: float = 0.2, status: str = "ok") -> CellRun:
    result = ExecutionResult(status=status, execution_count=3, outputs=outputs, elapsed=elapsed)  # type: ignore[arg-type]
    return CellRun(cell_id="6d6fe3bd", number=4, source="x", kernel=KERNEL, result=result)


def stream(text: str) -> dict[str, Any]:
    return {"output_type": "stream", "name": "stdout", "text": text}


@pytest.mark.parametrize(
    ("display", "language"),
    [
        ("Python 3 (ipykernel)", "Python"),
        ("R", "R"),
        ("Julia 1.10.2", "Julia"),
        ("Python [conda env:base]", "Python"),
    ],
)
def test_kernels_are_called_by_their_language(display: str, language: str) -> None:
    assert kernel_language(display) == language


def test_the_first_line_is_said_and_the_whole_output_is_in_the_detail() -> None:
    heard = heard_run(run([stream("2.0\n"), stream("second\nthird\n")]))
    assert heard.normal == "Cell 4 ran: 2.0. Plus 2 more lines."
    assert heard.terse == "Cell 4: 2.0."
    assert heard.detailed == "Cell 4 ran in less than a second. Output:\n2.0\nsecond\nthird"
    assert "6d6fe3bd" not in heard.normal + heard.terse + heard.detailed, "never an id"


def test_a_returned_value_counts_as_output_and_images_are_counted() -> None:
    value = {
        "output_type": "execute_result",
        "data": {"text/plain": "[70.7, 71.8]"},
        "metadata": {},
    }
    plot = {
        "output_type": "display_data",
        "data": {"image/png": "iVBOR", "text/plain": "<Figure>"},
        "metadata": {},
    }
    assert heard_run(run([value])).normal == "Cell 4 ran: [70.7, 71.8]."
    assert heard_run(run([plot])).normal == "Cell 4 ran and showed 1 image."
    assert heard_run(run([])).normal == "Cell 4 ran and had no output."
    assert (
        heard_run(run([value, plot], elapsed=12)).normal
        == "Cell 4 ran after 12 seconds: [70.7, 71.8]. It showed 1 image."
    )


def test_an_error_is_said_by_its_line() -> None:
    error = {
        "output_type": "error",
        "ename": "NameError",
        "evalue": "name 'df' is not defined",
        "traceback": [],
    }
    heard = heard_run(run([stream("loading\n"), error], status="error"))
    assert heard.normal == "Cell 4 failed: NameError: name 'df' is not defined."
    assert heard.terse == "Cell 4 failed: NameError: name 'df' is not defined."
    assert heard.detailed.startswith("Cell 4 failed: NameError") and "loading" in heard.detailed


def test_secrets_in_the_output_are_masked() -> None:
    secret = "sk-ant-api03-" + "B" * 40
    heard = heard_run(run([stream(f"key = {secret}\n")]))
    assert secret not in heard.normal and secret not in heard.detailed and secret not in heard.terse


def test_a_ten_megabyte_output_is_said_at_once() -> None:
    """Only the first line that is not progress is looked for (each line of 99 digits costs the
    progress patterns milliseconds: 100,000 of them took a minute). The bound is far above the
    second or two it takes on a quiet machine (7 s at a load of 9), so the layers running side
    by side cannot fail it, and well below the minute the regression took."""
    digits = "".join(f"{i:099d}\n" for i in range(100_000))
    started = time.perf_counter()
    heard = heard_run(run([stream("step 1/3\nstep 2/3\n" + digits)]))
    assert time.perf_counter() - started < 30.0
    assert heard.normal.startswith(f"Cell 4 ran: {0:099d}"[:40])
    assert "Plus 100,001 more lines." in heard.normal or "Plus 100001 more lines." in heard.normal


def test_a_long_output_is_read_a_block_at_a_time_and_said_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Half a million lines made at once were kept by the allocator after they were freed: the
    lines are made a block at a time, and what is said is what reading it whole said (the first
    line that is not progress, even near the end; the count; the last line printed)."""
    import jupyter_aaep.tools._run_text as run_text

    bar = "".join(f"\r{p:3d}%|{'#' * (p // 10):10s}| {p}/100" for p in range(101)) + "\n"
    body = "".join(f"step {i}/900\n\n" for i in range(900))
    outputs = [stream(bar + body + "  accuracy 0.91  \n" + "step 900/900\n")]
    whole = heard_run(run(outputs))
    ended_whole = run_text.end_sentence(4, 12.0, outputs)
    split: list[int] = []
    monkeypatch.setattr(run_text, "LINE_BLOCK_CHARS", 1000)
    lines = run_text._lines
    monkeypatch.setattr(run_text, "_lines", lambda text: split.append(len(text)) or lines(text))
    assert heard_run(run(outputs)) == whole
    assert whole.normal == "Cell 4 ran: accuracy 0.91. Plus 1002 more lines."
    assert run_text.end_sentence(4, 12.0, outputs) == ended_whole
    assert ended_whole == ("Cell 4 finished after 12 s: step 900/900.", False)
    assert len(split) > 10 and max(split) < 1000 + 2000  # a block and the line it ends within


def test_a_run_whose_kernel_dropped_output_says_so_to_the_model_and_the_listener() -> None:
    from jupyter_aaep.tools._run_text import run_text

    complete = run([stream("finished\n")])
    assert "dropped" not in run_text(complete, budget=2000)
    assert "lost" not in heard_run(complete).normal
    skipped = run([stream("41 it\n")])
    skipped.result.missed = 7
    text = run_text(skipped, budget=2000)
    assert "the kernel dropped 7 output messages: some output updates were skipped" in text
    assert text.index("dropped") < text.index("41 it")  # before the output it qualifies
    assert "Some of its output was lost on the way" in heard_run(skipped).normal
    ended = run([stream("41 it\n")])
    ended.result.end_heard = False
    assert "the kernel dropped the end of it" in run_text(ended, budget=2000)
    assert "lost on the way" in heard_run(ended).detailed
    assert heard_run(ended).terse.endswith(" Output lost.")  # at every verbosity
    assert "lost" not in heard_run(complete).terse
