"""Run a scripted model as its own process: ``python -m jupyter_aaep.testing.serve_model``.

Prints the fake Messages API's URL on the first line and serves until SIGINT/SIGTERM, so a
shell script can point ``ANTHROPIC_BASE_URL`` at it (the offline demo, the conformance run).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

from .demo_model import MODEL_ID, MODEL_LABEL
from .fake_anthropic import DEFAULT_MODELS, FakeAnthropic

DEFAULT_API_KEY = "sk-ant-fake-key"


def _responders() -> dict[str, Callable[[Any], Any]]:
    from .conformance_model import respond
    from .demo_model import demo_model

    return {"demo": demo_model, "conformance": respond}


def main(argv: list[str] | None = None) -> int:
    responders = _responders()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--responder",
        choices=sorted(responders),
        default="demo",
        help="which scripted model to serve",
    )
    parser.add_argument(
        "--port", type=int, default=0, help="only 0 (a free port, printed) is supported"
    )
    parser.add_argument("--api-key", default=DEFAULT_API_KEY, help="the key clients must present")
    args = parser.parse_args(argv)
    if args.port != 0:
        parser.error(
            "the fake binds a free port on 127.0.0.1: use --port 0 and read the URL it prints"
        )
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    # The demo model's Models API lists only itself, so the panel's picker says what it is.
    models: list[str | tuple[str, str]] = (
        [(MODEL_ID, MODEL_LABEL)] if args.responder == "demo" else DEFAULT_MODELS
    )
    fake = FakeAnthropic(
        responder=responders[args.responder], api_key=args.api_key, models=models
    ).start()
    print(fake.base_url, flush=True)
    try:
        stop.wait()
    finally:
        fake.stop()
    for problem in fake.problems:
        print(f"fake model: {problem}", file=sys.stderr)
    return 1 if fake.problems else 0


if __name__ == "__main__":
    sys.exit(main())
