"""A private desktop in which GNOME Orca listens to Chromium, for benchmarks/orca_session.py.

Every piece is started here, owned here and stopped here, by the process groups this module
created (and, as a net, any process still carrying this run's marker variable in its
environment), never by name:

- ``Xvfb`` on a free display (``-displayfd``: the server picks the number);
- a session ``dbus-daemon`` on a socket in the run's directory;
- ``at-spi-bus-launcher --launch-immediately``, then ``org.a11y.Status.IsEnabled`` set true;
- ``pulseaudio -n`` with only a null sink: speech is "played" in real time into nothing, so
  a key press really interrupts it;
- ``speech-dispatcher`` (espeak-ng, log level 5: its log says for every message whether it was
  played, cut or dropped);
- ``orca`` with ``sayAllOnLoad`` off, its debug log written to a pseudo-terminal so that Python
  buffers it by line and each line is stamped the moment it is written;
- Chromium, not headless, with ``--force-renderer-accessibility`` and a DevTools port on
  127.0.0.1 for playwright's ``connect_over_cdp``.

Keys are X events (``xdotool``): keys sent through the DevTools protocol never reach Orca.
"""

from __future__ import annotations

import json
import os
import pty
import secrets
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

MARKER = "AAEP_ORCA_RUN"
"""Environment variable every process of a run inherits; its value is the run's token."""

CHROMIUM = "/usr/bin/chromium"
NEEDED = {
    "Xvfb": "xvfb",
    "xdotool": "xdotool",
    "dbus-daemon": "dbus",
    "dbus-send": "dbus",
    "/usr/libexec/at-spi-bus-launcher": "at-spi2-core",
    "pulseaudio": "pulseaudio",
    "pactl": "pulseaudio-utils",
    "speech-dispatcher": "speech-dispatcher",
    "orca": "orca",
    CHROMIUM: "chromium",
}


def missing_programs() -> list[str]:
    """The Debian packages still to install (``scripts/orca-deps``), empty when all is there."""
    return sorted({pkg for program, pkg in NEEDED.items() if shutil.which(program) is None})


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class StampedLines:
    """Lines of a log as they arrive, each with the wall-clock time (s) it was read."""

    lines: list[tuple[float, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, line: str) -> None:
        with self.lock:
            self.lines.append((time.time(), line))

    def snapshot(self) -> list[tuple[float, str]]:
        with self.lock:
            return list(self.lines)


def _pump(fd: int, sink: StampedLines, copy: IO[str]) -> None:
    """Read a pseudo-terminal until it closes, stamping each line."""
    pending = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for raw in complete:
            line = raw.decode("utf-8", "replace").rstrip("\r")
            sink.add(line)
            copy.write(line + "\n")
        copy.flush()


def _tail(path: Path, sink: StampedLines, stop: threading.Event) -> None:
    """Follow a file that another process writes, stamping each line as it appears."""
    while not path.exists() and not stop.is_set():
        time.sleep(0.02)
    if stop.is_set() and not path.exists():
        return
    with path.open("rb") as handle:
        pending = b""
        while True:
            chunk = handle.read(65536)
            if chunk:
                pending += chunk
                *complete, pending = pending.split(b"\n")
                for raw in complete:
                    sink.add(raw.decode("utf-8", "replace"))
                continue
            if stop.is_set():
                break
            time.sleep(0.02)


ORCA_SETTINGS = {
    # Say All on page load would keep Orca reading the page instead of following the keys.
    "general": {"sayAllOnLoad": False, "firstStart": False},
    "profiles": {"default": {"profile": ["Default", "default"], "sayAllOnLoad": False}},
    "pronunciations": {},
    "keybindings": {},
}


@dataclass
class Desktop:
    """The whole stack; use as a context manager (everything stops on the way out)."""

    workdir: Path
    size: tuple[int, int] = (1400, 900)
    token: str = field(default_factory=lambda: secrets.token_hex(8))
    env: dict[str, str] = field(default_factory=dict)
    processes: list[tuple[str, subprocess.Popen[bytes]]] = field(default_factory=list)
    orca_log: StampedLines = field(default_factory=StampedLines)
    speech_log: StampedLines = field(default_factory=StampedLines)
    devtools_port: int = 0
    _threads: list[threading.Thread] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _pty_master: int | None = None
    _pty_slave: int | None = None

    @property
    def speech_log_path(self) -> Path:
        return self.workdir / "speechd" / "speech-dispatcher.log"

    @property
    def orca_log_path(self) -> Path:
        return self.workdir / "orca-debug.log"

    # -- starting ------------------------------------------------------------------------------
    def __enter__(self) -> Desktop:  # noqa: PYI034 - a dataclass, never subclassed
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        home = self.workdir / "home"
        runtime = self.workdir / "run"
        for path in (home, runtime, home / ".config", home / ".local/share", home / ".cache"):
            path.mkdir(parents=True, exist_ok=True)
        runtime.chmod(0o700)
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            MARKER: self.token,
            "HOME": str(home),
            "XDG_RUNTIME_DIR": str(runtime),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local/share"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "GTK_MODULES": "gail:atk-bridge",
            "NO_AT_BRIDGE": "0",
            "GNOME_ACCESSIBILITY": "1",
            "GSETTINGS_BACKEND": "memory",
        }
        self._start_x()
        self._start_dbus()
        self._start_accessibility_bus()
        self._start_audio()
        self._start_speech()
        self._start_orca()

    def _spawn(
        self, name: str, args: Sequence[str], *, log: str | None = None, **options: Any
    ) -> subprocess.Popen[bytes]:
        """Start *args* in a process group of its own (so stopping it takes its children)."""
        out = (self.workdir / (log or f"{name}.log")).open("ab")
        options.setdefault("stdout", out)
        options.setdefault("stderr", subprocess.STDOUT)
        process = subprocess.Popen(
            list(args), env=self.env, stdin=subprocess.DEVNULL, start_new_session=True, **options
        )
        out.close()
        self.processes.append((name, process))
        return process

    def _wait(self, what: str, ready: Any, timeout: float = 20.0) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, process in self.processes:
                if process.poll() is not None:
                    raise RuntimeError(
                        f"{name} exited ({process.returncode}) while waiting for {what}; see {self.workdir}/{name}.log"
                    )
            value = ready()
            if value:
                return value
            time.sleep(0.05)
        raise RuntimeError(f"{what} was not ready within {timeout:.0f} s (logs in {self.workdir})")

    def _start_x(self) -> None:
        read_end, write_end = os.pipe()
        width, height = self.size
        self._spawn(
            "Xvfb",
            [
                "Xvfb",
                "-displayfd",
                str(write_end),
                "-screen",
                "0",
                f"{width}x{height}x24",
                "-nolisten",
                "tcp",
                "-noreset",
            ],
            pass_fds=(write_end,),
        )
        os.close(write_end)
        number = b""
        deadline = time.monotonic() + 20
        while not number.endswith(b"\n") and time.monotonic() < deadline:
            chunk = os.read(read_end, 16)
            if not chunk:
                break
            number += chunk
        os.close(read_end)
        if not number.strip():
            raise RuntimeError(f"Xvfb did not report its display (see {self.workdir}/Xvfb.log)")
        self.env["DISPLAY"] = f":{number.decode().strip()}"

    def _start_dbus(self) -> None:
        address = f"unix:path={self.workdir / 'run' / 'bus'}"
        self._spawn("dbus", ["dbus-daemon", "--session", "--nofork", f"--address={address}"])
        self.env["DBUS_SESSION_BUS_ADDRESS"] = address
        self._wait("the session bus", lambda: (self.workdir / "run" / "bus").exists())

    def _dbus_send(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["dbus-send", "--session", "--print-reply", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )

    def _start_accessibility_bus(self) -> None:
        self._spawn("at-spi", ["/usr/libexec/at-spi-bus-launcher", "--launch-immediately"])
        # Asking the bus itself (NameHasOwner) activates nothing: a call to org.a11y.Bus before
        # the launcher owns the name would start a second launcher, and this one would quit.
        has_owner = (
            "--dest=org.freedesktop.DBus",
            "/org/freedesktop/DBus",
            "org.freedesktop.DBus.NameHasOwner",
            "string:org.a11y.Bus",
        )
        self._wait(
            "the accessibility bus", lambda: "boolean true" in self._dbus_send(*has_owner).stdout
        )
        enable = self._dbus_send(
            "--dest=org.a11y.Bus",
            "/org/a11y/bus",
            "org.freedesktop.DBus.Properties.Set",
            "string:org.a11y.Status",
            "string:IsEnabled",
            "variant:boolean:true",
        )
        if enable.returncode != 0:
            raise RuntimeError(f"could not enable accessibility: {enable.stderr.strip()}")

    def _start_audio(self) -> None:
        self._spawn(
            "pulseaudio",
            [
                "pulseaudio",
                "-n",
                "--daemonize=no",
                "--exit-idle-time=-1",
                "--disallow-exit",
                "--system=false",
                "--use-pid-file=false",
                "--load=module-native-protocol-unix",
                "--load=module-null-sink sink_name=silence",
                "--load=module-always-sink",
            ],
        )
        self._wait(
            "PulseAudio",
            lambda: (
                subprocess.run(
                    ["pactl", "set-default-sink", "silence"],
                    env=self.env,
                    capture_output=True,
                    check=False,
                ).returncode
                == 0
            ),
        )

    def _start_speech(self) -> None:
        logs = self.workdir / "speechd"
        logs.mkdir(exist_ok=True)
        self._spawn(
            "speech-dispatcher",
            [
                "speech-dispatcher",
                "--run-single",
                "--log-level",
                "5",
                "--log-dir",
                str(logs),
                "--timeout",
                "0",
            ],
        )
        socket_path = self.workdir / "run" / "speech-dispatcher" / "speechd.sock"
        self._wait("speech-dispatcher", socket_path.exists)
        self._follow(self.speech_log_path, self.speech_log)

    def _follow(self, path: Path, sink: StampedLines) -> None:
        thread = threading.Thread(target=_tail, args=(path, sink, self._stop), daemon=True)
        thread.start()
        self._threads.append(thread)

    def _start_orca(self) -> None:
        prefs = self.workdir / "orca-prefs"
        prefs.mkdir(exist_ok=True)
        (prefs / "user-settings.conf").write_text(json.dumps(ORCA_SETTINGS, indent=1))
        # Orca opens its debug file with open(): a terminal is buffered by line, a file by block.
        master, slave = pty.openpty()
        self._pty_master = master
        copy = self.orca_log_path.open("w")
        thread = threading.Thread(target=_pump, args=(master, self.orca_log, copy), daemon=True)
        thread.start()
        self._threads.append(thread)
        # The terminal's other end stays open here until the end: a terminal nobody holds open
        # reads as closed (EIO) before Orca has opened it.
        self._pty_slave = slave
        self._spawn(
            "orca",
            ["orca", "--replace", "--user-prefs", str(prefs), "--debug-file", os.ttyname(slave)],
        )
        self._wait(
            "Orca",
            lambda: any(
                "SPEECH OUTPUT: 'Screen reader on" in line for _, line in self.orca_log.snapshot()
            ),
            40,
        )
        time.sleep(1.5)  # "Screen reader on." is said before Orca listens to the browser

    def start_chromium(self, url: str = "about:blank") -> str:
        """Start Chromium on the display; returns the DevTools endpoint for connect_over_cdp."""
        self.devtools_port = free_port()
        width, height = self.size
        self._spawn(
            "chromium",
            [
                CHROMIUM,
                f"--user-data-dir={self.workdir / 'chromium-profile'}",
                "--remote-debugging-address=127.0.0.1",
                f"--remote-debugging-port={self.devtools_port}",
                "--force-renderer-accessibility",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-features=Translate",
                "--password-store=basic",
                "--use-mock-keychain",
                "--window-position=0,0",
                f"--window-size={width},{height}",
                url,
            ],
        )
        endpoint = f"http://127.0.0.1:{self.devtools_port}"

        def answers() -> bool:
            try:
                with urllib.request.urlopen(f"{endpoint}/json/version", timeout=2):
                    return True
            except OSError:
                return False

        self._wait("Chromium's DevTools port", answers, 60)
        return endpoint

    # -- keys -----------------------------------------------------------------------------
    def xdotool(self, *args: str) -> str:
        done = subprocess.run(
            ["xdotool", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"xdotool {' '.join(args)} failed: {done.stderr.strip()}")
        return done.stdout.strip()

    def focus_browser(self) -> None:
        """Give Chromium's window the X focus (there is no window manager to do it)."""
        window = self.xdotool(
            "search", "--sync", "--onlyvisible", "--class", "chromium"
        ).splitlines()[-1]
        self.xdotool("windowfocus", "--sync", window)

    def key(self, *keys: str) -> float:
        """Press *keys* (xdotool names, e.g. ``ctrl+shift+a``) as X events; returns the time."""
        at = time.time()
        self.xdotool("key", "--clearmodifiers", "--delay", "60", *keys)
        return at

    def type_text(self, text: str) -> float:
        at = time.time()
        self.xdotool("type", "--delay", "40", text)
        return at

    # -- stopping -----------------------------------------------------------------------------
    def stop(self) -> None:
        """Stop every process this desktop started (newest first), then any straggler."""
        for name, process in reversed(self.processes):
            _stop_group(process)
        self.processes.clear()
        for pid in _marked_pids(self.token):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        self._stop.set()
        for fd in (self._pty_slave, self._pty_master):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._pty_master = self._pty_slave = None
        for thread in self._threads:
            thread.join(timeout=2)


def _stop_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group this module created for *process*, SIGKILL it if it lingers."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except OSError:
        pass
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def _marked_pids(token: str) -> list[int]:
    """PIDs of processes whose environment carries this run's marker (children that left
    the process group, e.g. services D-Bus activated)."""
    wanted = f"{MARKER}={token}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if wanted in environ.split(b"\0"):
            found.append(int(entry.name))
    return found
