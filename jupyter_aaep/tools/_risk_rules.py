"""The tables the Python code-risk walk (:mod:`._python_risk`) reads: which names are risky.

Risky modules are read through allowlists: an attribute not listed as harmless is flagged, so
a function added to ``os`` in a later Python is asked about rather than let through.
"""

from __future__ import annotations

import re

from ._shell_risk import Category

# fmt: off
OS_SAFE = {
    "path", "getcwd", "getcwdb", "listdir", "scandir", "walk", "fwalk", "sep", "altsep", "extsep",
    "pathsep", "linesep", "curdir", "pardir", "defpath", "devnull", "name", "cpu_count",
    "process_cpu_count", "getpid", "getppid", "fspath", "fsencode", "fsdecode", "stat", "lstat",
    "get_terminal_size", "strerror", "urandom", "PathLike", "DirEntry", "uname", "getlogin",
    "getuid", "geteuid", "getgid", "access", "sched_getaffinity", "times", "error", "terminal_size",
}
OS_RULES: dict[str, Category] = {
    **dict.fromkeys(("remove", "unlink", "rmdir", "removedirs", "truncate", "ftruncate"), "delete"),
    **dict.fromkeys(("system", "popen", "startfile", "posix_spawn", "posix_spawnp", "fork", "forkpty"), "shell"),
    **dict.fromkeys(("kill", "killpg", "_exit", "abort"), "kernel"),
    **dict.fromkeys(("setuid", "seteuid", "setgid", "setegid", "setreuid", "setregid", "setgroups", "chroot"), "privilege"),
    **dict.fromkeys(
        ("rename", "renames", "replace", "mkdir", "makedirs", "chmod", "lchmod", "fchmod", "chown", "lchown",
         "fchown", "link", "symlink", "open", "write", "fdopen", "utime", "mkfifo", "mknod", "sendfile"),
        "write",
    ),
    **dict.fromkeys(("environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"), "environment"),
}
MODULE_RULES: dict[str, tuple[Category, frozenset[str]]] = {
    # module: (category of any attribute not in the allowlist, allowlist)
    "shutil": ("write", frozenset({"which", "disk_usage", "get_terminal_size", "get_archive_formats",
                                   "get_unpack_formats", "Error", "SameFileError"})),
    "subprocess": ("shell", frozenset({"PIPE", "STDOUT", "DEVNULL", "CalledProcessError", "TimeoutExpired",
                                       "CompletedProcess", "SubprocessError", "list2cmdline"})),
    "pty": ("shell", frozenset()),
    "signal": ("system", frozenset()),
    "ctypes": ("system", frozenset()),
    "_ctypes": ("system", frozenset()),
    "cffi": ("system", frozenset()),
    "mmap": ("system", frozenset()),
    # Walking the kernel's live objects reaches the agent's client (and its credential).
    "gc": ("reach", frozenset({"collect", "enable", "disable", "isenabled", "get_count", "get_threshold",
                               "set_threshold", "get_stats", "freeze", "unfreeze", "get_freeze_count",
                               "is_tracked", "is_finalized", "garbage", "callbacks", "set_debug", "get_debug"})),
    "fcntl": ("system", frozenset()),
    "resource": ("system", frozenset({"getrusage", "getrlimit"})),
    "socket": ("network", frozenset({"gethostname", "getfqdn", "gaierror", "timeout", "error"})),
    "smtplib": ("network", frozenset()),
    "ftplib": ("network", frozenset()),
    "telnetlib": ("network", frozenset()),
    "paramiko": ("network", frozenset()),
    "keyring": ("credentials", frozenset()),
    "runpy": ("eval", frozenset()),
    "code": ("eval", frozenset()),
    "posix": ("system", frozenset()),
    "nt": ("system", frozenset()),
    "_posixsubprocess": ("shell", frozenset()),
    # Code in the kernel that uses our kernel client could approve the agent's own requests.
    "jupyter_aaep": ("agent", frozenset({"aaep_tool", "ToolResult", "ToolError", "ActionPreview", "ToolContext",
                                          "__version__"})),
}
EXACT: dict[str, Category] = {
    **dict.fromkeys(("eval", "exec", "compile", "execfile", "pickle.loads", "_pickle.loads", "marshal.loads",
                     "dill.loads", "cloudpickle.loads"), "eval"),
    "webbrowser.open": "system",
    "sys.modules": "reach",
    # Frames hold every caller's globals: a walk up the stack reaches ``sys`` and the agent's client.
    **dict.fromkeys(("inspect.currentframe", "inspect.stack", "inspect.trace", "inspect.getouterframes",
                     "inspect.getinnerframes", "sys._current_frames", "traceback.walk_stack",
                     "traceback.walk_tb"), "reach"),
    **dict.fromkeys(("__import__", "importlib.import_module", "importlib.__import__",
                     "sys._getframe", "sys.settrace", "sys.setprofile", "sys.addaudithook", "sys.meta_path",
                     "sys.path_hooks", "types.FunctionType", "types.CodeType", "__builtins__", "__loader__",
                     "__spec__", "globals", "locals"), "dynamic"),
    **dict.fromkeys(("exit", "quit", "sys.exit"), "kernel"),
    **dict.fromkeys(("pip.main", "asyncio.create_subprocess_exec", "asyncio.create_subprocess_shell",
                     "platform.popen", "commands.getoutput"), "shell"),
    **dict.fromkeys(("urllib.request.urlretrieve", "tarfile.TarFile.extractall"), "write"),
    **dict.fromkeys(("IPython.display.Javascript", "IPython.display.display_javascript",
                     "IPython.core.display.Javascript"), "browser"),
    "jupyter_core.paths.jupyter_runtime_dir": "runtime",
    **dict.fromkeys(("jupyter_server.serverapp.list_running_servers", "notebook.notebookapp.list_running_servers"),
                    "server_token"),
    "http.client.HTTPConnection": "network",
    "http.client.HTTPSConnection": "network",
}
DYNAMIC_PREFIXES = ("importlib.util.", "importlib.machinery.", "pip._internal")
REACH_PREFIXES = ("sys.modules.", "sys.modules[")
"""Walks over every loaded module: the agent's kernel client is one of them."""
FRAME_ATTRIBUTES = {"f_globals", "f_locals", "f_builtins", "f_back", "tb_frame", "gi_frame", "cr_frame",
                    "ag_frame"}
"""Attributes of frames and of what holds one: a walk through them reaches any caller's globals."""
AGENT_NAMES = {"KernelClient", "from_environment", "LiveView", "EventStream", "kernel_credentials"}
"""Names of the agent's own client objects in the kernel, wherever they are reached from."""
RISKY_MODULES = {"os", "sys", "builtins", "importlib", "io", "codecs", "pathlib", *MODULE_RULES}
# Module names that are also common variable names (``signal = np.sin(t)``): all their
# attributes count only when the cell imports them; otherwise only these well-known functions.
AMBIGUOUS = {
    "signal": {"signal", "alarm", "setitimer", "pthread_kill", "raise_signal", "siginterrupt", "set_wakeup_fd"},
    "code": {"interact", "InteractiveConsole", "InteractiveInterpreter", "compile_command"},
    "resource": {"setrlimit", "prlimit"},
    "socket": {"socket", "create_connection", "create_server", "socketpair", "fromfd"},
    "mmap": {"mmap"},
    "nt": set(),
    "posix": set(),
    "cffi": {"FFI"},
    "fcntl": {"fcntl", "ioctl", "flock", "lockf"},
}
AS_VALUE = {"os", "sys", "shutil", "subprocess", "builtins", "importlib", "ctypes", "pty", "runpy"}
DANGEROUS_DUNDERS = {
    "__globals__", "__builtins__", "__subclasses__", "__bases__", "__base__", "__mro__", "__code__",
    "__closure__", "__getattribute__", "__import__", "__dict__", "__loader__", "__spec__", "__func__",
    "__reduce__", "__reduce_ex__", "__self__",
}
# Calls that open a file, and the position of their ``mode`` argument.
OPENERS = {
    "open": 1, "io.open": 1, "_io.open": 1, "io.FileIO": 1, "codecs.open": 1, "os.fdopen": 1,
    "gzip.open": 1, "bz2.open": 1, "lzma.open": 1, "tarfile.open": 1, "zipfile.ZipFile": 1,
}
PATH_WRITES: dict[str, Category] = {
    **dict.fromkeys(("touch", "write_text", "write_bytes", "mkdir", "symlink_to", "hardlink_to",
                     "link_to", "chmod", "lchmod"), "write"),
    **dict.fromkeys(("unlink", "rmdir"), "delete"),
}
PATH_ONLY_WRITES = {"rename", "replace"}  # also DataFrame / str methods: only on known paths
PATH_MAKERS = {"pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath", "pathlib.WindowsPath", "Path", "PurePath"}
HTTP_LIBS = ("requests", "httpx", "aiohttp", "urllib3")
HTTP_WRITES = {"post", "put", "patch", "delete"}
ENV_LOOKUPS = {"os.getenv", "os.getenvb", "os.environ.get", "os.environ.pop", "os.environ.setdefault"}
ENV_WHOLE = {"copy", "items", "values", "keys", "__iter__", "__repr__", "__str__"}
IPYTHON = "get_ipython()"
MODE = re.compile(r"^[rwxabtU+]{1,4}$")
AGENT_SERVER = re.compile(
    r"(AAEP_KERNEL_SECRET|AAEP_SERVER_URL|AAEP_KERNEL_ID|aaep/v1/kernel|X-AAEP-Kernel)", re.IGNORECASE
)
"""Text that only code reaching for the agent's kernel endpoints needs (the secret, the URL, the headers)."""
# fmt: on
