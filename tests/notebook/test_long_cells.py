"""Long-running cells with real kernels: the agent never blocks, progress is read from what the
cell reports and paced, and every long run ends in one sentence in the notebook's chat.

Thresholds are shortened (a 1-second wait window, 0.5-second pacing) so a cell that outlives
several wait windows takes a few seconds.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
import time
from typing import Any

import pytest
from jupyter_client.session import Session
from nb_helpers import Progress, on_server_loop, wait_for

from jupyter_aaep.aaep.emitter import ListSubscriber
from jupyter_aaep.aaep.session import Producer
from jupyter_aaep.agent.services import AgentServices, LeftRunning
from jupyter_aaep.agent.tools import ToolContext, ToolRegistry
from jupyter_aaep.chats.runner import ChatRunner
from jupyter_aaep.notebook import executor as executor_module
from jupyter_aaep.server.long_runs import LongRunNews, how_far_along
from jupyter_aaep.tools.notebook import interrupt_kernel, run_all_cells, run_cell, wait_for_cell

pytestmark = [pytest.mark.slow, pytest.mark.shared_server]

TQDM_TEXT = "import sys, time\nfrom tqdm import tqdm\nfor i in tqdm(range(30), desc='training', file=sys.stderr):\n    time.sleep(0.1)\nprint('accuracy 0.91')"
TQDM_NOTEBOOK = "import time\nfrom tqdm.notebook import tqdm\nfor i in tqdm(range(30), desc='fitting'):\n    time.sleep(0.1)\nprint('fitted')"
INT_PROGRESS = (
    "import time\nfrom ipywidgets import IntProgress\nfrom IPython.display import display\n"
    "bar = IntProgress(min=0, max=30, description='Loading')\ndisplay(bar)\n"
    "for i in range(30):\n    bar.value = i + 1\n    time.sleep(0.1)\nprint('loaded')"
)
STEPS = "import time\nfor i in range(1, 31):\n    print(f'step {i}/30', flush=True)\n    time.sleep(0.1)\n'all steps done'"
SILENT = "import time\ntime.sleep(3.2)"


@pytest.fixture
def quick_windows(service: Any) -> Any:
    service.run_cell_wait_seconds = 1.0
    service.runs.announce_seconds = 1.0
    service.runs.min_gap = 0.5
    return service


async def run_to_the_end(ctx: ToolContext, cell_id: str) -> tuple[list[str], Any]:
    """run_cell, then wait_for_cell until it ends; returns the "still running" answers and the end."""
    answers = []
    result = await run_cell(ctx, cell_id=cell_id)
    while "is still running" in str(result.content):
        answers.append(str(result.content))
        result = await wait_for_cell(ctx, cell_id=cell_id, timeout_seconds=1)
    return answers, result


@on_server_loop
async def test_progress_is_read_from_what_each_cell_reports(
    notebook_file, make_ctx, quick_windows
) -> None:
    path = notebook_file(
        "long.ipynb",
        [
            {"id": "text", "source": TQDM_TEXT},
            {"id": "widget", "source": TQDM_NOTEBOOK},
            {"id": "bar", "source": INT_PROGRESS},
            {"id": "steps", "source": STEPS},
            {"id": "silent", "source": SILENT},
        ],
    )
    expectations = {
        "text": ("accuracy 0.91", True),
        "widget": ("fitted", True),
        "bar": ("loaded", True),
        "steps": ("all steps done", True),
        "silent": ("", False),
    }
    for number, (cell_id, (final, counted)) in enumerate(expectations.items(), 1):
        progress = Progress()
        ctx = make_ctx(path, progress=progress)
        started = time.monotonic()
        answers, result = await run_to_the_end(ctx, cell_id)
        took = time.monotonic() - started
        # Longer than the 1-second window, never interrupted, and the final output comes back.
        assert took > 2.5 and answers, cell_id
        assert answers[0].startswith(f"Cell {number} is still running ("), answers[0]
        assert "nothing interrupts it" in answers[0]
        assert "KeyboardInterrupt" not in str(result.content) and not result.is_error
        assert final in str(result.content) and final in result.summary, (cell_id, result.summary)
        percents = [c["percent"] for c in progress.calls if c.get("percent") is not None]
        if counted:
            assert percents and percents == sorted(percents), (
                cell_id,
                percents,
            )  # rise, never back
            assert 0 < percents[-1] <= 100
            last = [c for c in progress.calls if c.get("percent") is not None][-1]
            assert last["total_steps"] == 30 and 1 <= last["step"] <= 30, (cell_id, last)
            assert f"Cell {number}: " in last["summary"] and " of 30" in last["summary"], last
            assert " of 30" in last["description"]  # the bar's aria-valuetext
            if cell_id in ("text", "widget"):  # tqdm gives its own estimate of the time left
                assert any(c.get("eta_seconds") is not None for c in progress.calls), cell_id
            assert any("of 30" in a for a in answers), answers  # "(2 s; training 12 of 30, …)"
        else:
            assert not percents
            assert any("still running after" in p for p in progress), list(progress)


class FastClock:
    """``time`` for the executor, whose clock runs *factor* times faster from now on."""

    def __init__(self, factor: float) -> None:
        self.factor, self.base = factor, time.monotonic()

    def monotonic(self) -> float:
        return self.base + (time.monotonic() - self.base) * self.factor


@on_server_loop
async def test_a_ten_minute_cell_is_never_interrupted(
    notebook_file, make_ctx, quick_windows, monkeypatch
) -> None:
    """With no limit nothing interrupts a cell, however long: the executor keeps every deadline
    of a run on its clock, sped up 150 times here, so a 4.5-s sleep lasts over 11 minutes to it.
    A limit the model sets still fires on that same clock (so the check could fail)."""
    code = "import time\ntime.sleep(4.5)\nprint('trained for ten minutes')"
    path = notebook_file(
        "ten.ipynb", [{"id": "warm", "source": "x = 1"}, {"id": "long", "source": code}]
    )
    ctx = make_ctx(path)
    assert not (await run_cell(ctx, cell_id="warm")).is_error  # the kernel starts on the real clock
    monkeypatch.setattr(executor_module, "time", FastClock(150))
    answers, result = await run_to_the_end(ctx, "long")
    assert answers and "nothing interrupts it" in answers[0]
    assert not result.is_error and "KeyboardInterrupt" not in str(result.content)
    assert "trained for ten minutes" in str(result.content)
    took = float(str(result.content).split(" ran in ", 1)[1].split(" s", 1)[0])
    assert took > 600, result.content  # the executor's own measure of the run
    # 300 seconds on the fast clock are 2 real seconds: interrupted at the model's limit.
    limited = await run_cell(ctx, cell_id="long", timeout_seconds=300)
    assert "time limit of 300 seconds" in limited.content
    with pytest.raises(Exception, match="time limit of 300 seconds"):
        await wait_for_cell(ctx, cell_id="long", timeout_seconds=20)


@on_server_loop
async def test_run_all_cells_stops_waiting_not_running(
    notebook_file, make_ctx, quick_windows
) -> None:
    path = notebook_file(
        "all.ipynb",
        [
            {"id": "a", "source": "x = 1"},
            {"id": "slow", "source": SILENT},
            {"id": "c", "source": "print(x + 1)"},
        ],
    )
    ctx = make_ctx(path)
    result = await run_all_cells(ctx)
    assert (
        "Cell 2 is still running" in result.content and "Cell 3 has not run yet" in result.content
    )
    assert "from_cell_id='c'" in result.content and result.summary.startswith(
        "Ran 1 cell; cell 2 is still running"
    )
    done = await wait_for_cell(ctx, cell_id="slow", timeout_seconds=10)
    assert "ran in" in done.content
    rest = await run_all_cells(ctx, from_cell_id="c")
    assert "2" in rest.content and not rest.is_error


@on_server_loop
async def test_interrupt_kernel_stops_a_cell_left_running(
    notebook_file, make_ctx, quick_windows
) -> None:
    path = notebook_file(
        "spin.ipynb", [{"id": "spin", "source": "import time\nwhile True:\n    time.sleep(0.05)"}]
    )
    ctx = make_ctx(path)
    first = await run_cell(ctx, cell_id="spin")
    assert "Cell 1 is still running" in first.content
    await asyncio.sleep(1.5)
    assert (
        "Cell 1 is still running"
        in (await wait_for_cell(ctx, cell_id="spin", timeout_seconds=0.5)).content
    )
    stopped = await interrupt_kernel(ctx)
    assert stopped.summary.startswith("Interrupted the kernel. Cell 1 stopped after ")
    nb = await quick_windows.open(path)
    assert any(o.get("ename") == "KeyboardInterrupt" for o in nb.cell("spin")["outputs"])
    assert nb.cell("spin")["execution_state"] == "idle"
    # A time limit the model sets still works (longer than the 1-s wait window: the two do not race).
    limited = await run_cell(ctx, cell_id="spin", timeout_seconds=3)
    assert (
        "Cell 1 is still running" in limited.content
        and "time limit of 3 seconds" in limited.content
    )
    with pytest.raises(Exception, match="time limit of 3 seconds"):
        await wait_for_cell(ctx, cell_id="spin", timeout_seconds=10)


# -- told in the chat ---------------------------------------------------------------------------


@pytest.fixture
def chat_news(service: Any, jp_serverapp: Any, jp_asyncio_loop: asyncio.AbstractEventLoop) -> Any:
    runner = ChatRunner(
        client_factory=lambda: None,
        registry_factory=lambda chat: ToolRegistry(),  # type: ignore[arg-type,return-value]
        services=AgentServices(notebook=service),
    )
    news = LongRunNews(
        runner,
        service,
        Producer(model="claude-test"),
        person_runs_after=1.0,
        announce_seconds=1.0,
        min_gap=0.5,
    )
    runner.services = AgentServices(notebook=service, long_runs=news)
    yield runner, news
    jp_asyncio_loop.run_until_complete(news.close())


def chat_ctx(runner: ChatRunner, path: str) -> tuple[ToolContext, ListSubscriber, str]:
    chat = runner.create_chat(path)
    heard = ListSubscriber()
    chat.emitter.subscribe(heard)
    ctx = ToolContext(
        tool_call_id="call_1", chat_id=chat.chat_id, notebook_path=path, services=runner.services
    )
    return ctx, heard, chat.chat_id


@on_server_loop
async def test_a_cell_left_running_is_announced_once_when_it_ends(
    notebook_file, quick_windows, chat_news
) -> None:
    runner, news = chat_news
    path = notebook_file("told.ipynb", [{"id": "fit", "source": STEPS}])
    ctx, heard, chat_id = chat_ctx(runner, path)
    first = await run_cell(ctx, cell_id="fit")
    assert "still running" in first.content
    assert news.still_running_note(chat_id) == LeftRunning(
        "Cell 1 is still running; you will hear when it ends.", 1
    )
    answer = how_far_along(news.running(path))
    assert (
        answer["sentence"].startswith("Cell 1 is still running (")
        and answer["running"][0]["started_by"] == "agent"
    )
    assert answer["running"][0]["value_text"]
    await wait_for(lambda: bool(heard.of_type("session.completed")), what="the end", timeout=15)
    await asyncio.sleep(1)
    ends = heard.of_type("session.completed") + heard.of_type("session.errored")
    assert len(ends) == 1 and ends[0]["summary_normal"].startswith("Cell 1 finished after ")
    assert ends[0]["summary_normal"].endswith(
        ": 'all steps done'."
    )  # its result, not a progress line
    started = heard.of_type("session.started")
    assert len(started) == 1 and started[0]["requested_by"] == "kernel:agent-run"
    percents = [
        e["progress"]["percent"]
        for e in heard.of_type("progress.updated")
        if "percent" in e["progress"]
    ]
    assert percents == sorted(percents)
    assert news.still_running_note(chat_id) is None
    assert how_far_along(news.running(path))["sentence"] == "No cell is running in this notebook."


@pytest.mark.parametrize(
    ("how", "said"),
    [("killed", "the kernel died"), ("restarted", "the kernel was restarted")],
)
@pytest.mark.fresh_server  # kills and restarts a kernel
@on_server_loop
async def test_a_kernel_killed_mid_run_is_said_once(
    notebook_file, quick_windows, chat_news, jp_serverapp, how, said
) -> None:
    runner, news = chat_news
    path = notebook_file("killed.ipynb", [{"id": "long", "source": "import time\ntime.sleep(60)"}])
    ctx, heard, _ = chat_ctx(runner, path)
    news.start()  # the person-run watch too: it must not tell the agent's run a second time
    assert "still running" in (await run_cell(ctx, cell_id="long")).content
    kernel = await quick_windows.kernel(path)
    km = jp_serverapp.kernel_manager.get_kernel(kernel.kernel_id)
    await asyncio.sleep(2.5)  # the watch is connected
    if how == "killed":
        os.kill(km.provisioner.pid, signal.SIGKILL)
    else:  # from JupyterLab's Restart Kernel
        await jp_serverapp.kernel_manager.restart_kernel(kernel.kernel_id)
    await wait_for(lambda: bool(heard.of_type("session.errored")), what="the death", timeout=20)
    await asyncio.sleep(3)
    errored = heard.of_type("session.errored")
    assert len(errored) == 1, [e["summary_normal"] for e in errored]
    assert errored[0]["summary_normal"].startswith("Cell 1 stopped after ")
    assert said in errored[0]["summary_normal"] and errored[0]["urgency"] == "critical"
    assert errored[0]["summary_normal"].endswith("so its variables are lost.")
    assert not heard.of_type("session.completed")


@on_server_loop
async def test_a_long_cell_the_person_runs_is_announced(
    notebook_file, quick_windows, chat_news, make_ctx, jp_serverapp
) -> None:
    runner, news = chat_news
    code = "import time\nfor i in range(1, 26):\n    print(f'epoch {i}/25', flush=True)\n    time.sleep(0.1)\nprint('accuracy 0.91')"
    path = notebook_file(
        "person.ipynb",
        [
            {"id": "setup", "source": "x = 1"},
            {"id": "train", "source": code},
            {"id": "boom", "source": "import time\ntime.sleep(1.5)\nraise ValueError('bad shape')"},
        ],
    )
    await run_cell(
        make_ctx(path), cell_id="setup"
    )  # starts the kernel (an agent run: never told here)
    ctx, heard, _ = chat_ctx(runner, path)
    news.start()
    kernel = await quick_windows.kernel(path)
    km = jp_serverapp.kernel_manager.get_kernel(kernel.kernel_id)
    await wait_for(lambda: bool(news._watches), what="the watch", timeout=10)
    await asyncio.sleep(1)
    person = km.client(session=Session(key=km.session.key))
    person.start_channels()
    try:
        await person.wait_for_ready(timeout=10)
        person.execute("print('quick')")  # under the threshold: nothing said
        await asyncio.sleep(1)
        person.execute(code)
        await asyncio.sleep(1.5)
        answer = how_far_along(news.running(path))
        assert answer["running"] and answer["running"][0]["started_by"] == "person"
        assert answer["sentence"].startswith("Cell 2 is still running (")
        told = await wait_for_cell(
            ctx, cell_id="train", timeout_seconds=1
        )  # the agent cannot wait on it
        assert (
            told.content.startswith("Cell 2 is still running (")
            and "The person started it" in told.content
        )
        await wait_for(lambda: bool(heard.of_type("session.completed")), what="the end", timeout=15)
        person.execute("import time\ntime.sleep(1.5)\nraise ValueError('bad shape')")
        await wait_for(
            lambda: bool(heard.of_type("session.errored")), what="the failure", timeout=15
        )
    finally:
        person.stop_channels()
    completed = heard.of_type("session.completed")
    assert [e["summary_normal"] for e in completed] == [completed[0]["summary_normal"]]
    assert completed[0]["summary_normal"].startswith("Cell 2 finished after ")
    assert completed[0]["summary_normal"].endswith(": accuracy 0.91.")
    failed = heard.of_type("session.errored")
    assert len(failed) == 1 and failed[0]["summary_normal"].startswith("Cell 3 failed after ")
    assert (
        failed[0]["summary_normal"].endswith("ValueError: bad shape.")
        and failed[0]["urgency"] == "critical"
    )
    assert all("quick" not in e.get("summary_normal", "") for e in heard.events)
    assert all(e["requested_by"] == "kernel:person-run" for e in heard.of_type("session.started"))


@on_server_loop
async def test_a_run_the_person_starts_as_the_chat_opens_is_followed(
    notebook_file, quick_windows, chat_news, make_ctx, jp_serverapp
) -> None:
    """The panel opens (its chat is made) and the person runs a cell at once: the chat's kernel
    is watched from the next tick, not from the next two-second look at the chats, so the run
    is followed (browser test of long cells: it once ran before the watch did)."""
    runner, news = chat_news
    code = "import time\nfor i in range(1, 11):\n    print(f'epoch {i}/10', flush=True)\n    time.sleep(0.3)"
    path = notebook_file(
        "quick-person.ipynb", [{"id": "setup", "source": "x = 1"}, {"id": "train", "source": code}]
    )
    await run_cell(make_ctx(path), cell_id="setup")  # starts the kernel (an agent run)
    kernel = await quick_windows.kernel(path)
    km = jp_serverapp.kernel_manager.get_kernel(kernel.kernel_id)
    person = km.client(session=Session(key=km.session.key))
    person.start_channels()
    try:
        await person.wait_for_ready(timeout=10)
        news.start()
        await wait_for(lambda: news._synced > 0, what="the first look at the chats", timeout=10)
        _, heard, _ = chat_ctx(runner, path)  # right after that look: the next is 2 s away
        await asyncio.sleep(0.6)  # a quick person: Ctrl+Enter
        person.execute(code)
        await asyncio.sleep(1.5)
        answer = how_far_along(news.running(path))
        assert answer["running"] and answer["running"][0]["started_by"] == "person", answer
        await wait_for(lambda: bool(heard.of_type("session.completed")), what="the end", timeout=15)
    finally:
        person.stop_channels()
    (completed,) = heard.of_type("session.completed")
    assert completed["summary_normal"].startswith("Cell 2 finished after ")


class TimedSubscriber(ListSubscriber):
    """Also remembers when each event arrived (monotonic seconds), to check the pacing."""

    def __init__(self) -> None:
        super().__init__()
        self.arrived: list[float] = []

    def deliver(self, event: Any) -> None:
        self.arrived.append(time.monotonic())
        super().deliver(event)


class StallOnce:
    """Holds the whole server (a blocking sleep) while one progress event goes out, before the
    subscribers after it get the event: what a loaded machine does now and then (a long garbage
    collection, the process descheduled). A CI run at load 12 saw such a pause of about 0.8 s
    between the pacer's clock reading and the event reaching a listener."""

    def __init__(self, nth: int, seconds: float) -> None:
        self.nth, self.seconds, self.seen = nth, seconds, 0

    def deliver(self, event: Any) -> None:
        if str(event.get("type", "")).endswith("progress.updated"):
            self.seen += 1
            if self.seen == self.nth:
                time.sleep(self.seconds)  # blocking on purpose: nothing else runs meanwhile


SCALE = 15
"""The pacing defaults divided by 15: the 15-s gap is 1 s, the 60-s update 4 s, 2 minutes 8 s."""


@on_server_loop
async def test_a_two_minute_run_is_heard_at_a_bearable_rate(
    notebook_file, service, chat_news
) -> None:
    """Real kernels, time scaled down 15 times: a "2-minute" cell that counts its steps and one
    that prints nothing are each told in at most 6 announcements at normal verbosity (the start,
    the milestones or the periodic update, the end), never two progress events within the gap,
    even when the server stalls while one of them goes out (then the next one waits the gap
    from when the late one arrived, not from when it was due)."""
    runner, _ = chat_news
    service.run_cell_wait_seconds = 1.0
    service.runs.min_gap = 15 / SCALE
    service.runs.announce_seconds = 60 / SCALE
    counted = "import time\nfor i in range(1, 81):\n    print(f'step {i}/80', flush=True)\n    time.sleep(0.1)\nprint('trained')"
    silent = "import time\ntime.sleep(8)\nprint('slept')"
    path = notebook_file(
        "paced.ipynb", [{"id": "counted", "source": counted}, {"id": "silent", "source": silent}]
    )
    ctx, _, chat_id = chat_ctx(runner, path)
    runner.get(chat_id).emitter.subscribe(StallOnce(nth=2, seconds=0.8))  # the counted cell's
    heard = TimedSubscriber()
    runner.get(chat_id).emitter.subscribe(heard)
    for number, cell_id in enumerate(("counted", "silent"), 1):
        assert "still running" in (await run_cell(ctx, cell_id=cell_id)).content
        await wait_for(
            lambda n=number: len(heard.of_type("session.completed")) == n,  # type: ignore[misc]
            what=f"the end of cell {number}",
            timeout=40,
        )
    await asyncio.sleep(1)  # a repeated end would be here by now
    stories = [e["session_id"] for e in heard.of_type("session.started")]
    assert len(stories) == 2, [e["summary_normal"] for e in heard.of_type("session.started")]
    for number, (story, end) in enumerate(zip(stories, ("trained", "slept"), strict=True), 1):
        timed = [(t, e) for t, e in zip(heard.arrived, heard.events, strict=True)]
        timed = [(t, e) for t, e in timed if e["session_id"] == story]
        progress = [(t, e) for t, e in timed if str(e["type"]).endswith("progress.updated")]
        spoken = [
            e
            for _, e in timed
            if str(e["type"]).endswith(("session.started", "session.completed"))
            or (str(e["type"]).endswith("progress.updated") and e["urgency"] == "normal")
        ]
        said = [e["summary_normal"] for e in spoken]
        assert 3 <= len(spoken) <= 6, said  # the start, at least one update, the end
        assert said[-1].startswith(f"Cell {number} finished after ") and said[-1].endswith(
            f": {end}."
        ), said
        times = [t for t, _ in progress]
        gaps = [b - a for a, b in itertools.pairwise(times)]
        assert all(gap >= 0.9 * service.runs.min_gap for gap in gaps), gaps
        announced = [e for _, e in progress if e["urgency"] == "normal"]
        if end == "trained":
            percents = [e["progress"]["percent"] for _, e in progress]
            assert percents == sorted(percents) and len(percents) >= 2, percents
            reached = [
                max(m for m in (25, 50, 75) if e["progress"]["percent"] >= m) for e in announced
            ]
            assert 1 <= len(reached) <= 3 and reached == sorted(set(reached)), reached
            assert all(" of 80" in e["summary_normal"] for e in announced), said
        else:
            assert all(e["progress"].get("percent") is None for _, e in progress)
            assert 1 <= len(announced) <= 2, said  # one per 4 s ("60 s") of an 8-s ("2-min") run
            assert all(
                e["summary_normal"].startswith("Cell 2 is still running after ") for e in announced
            ), said
