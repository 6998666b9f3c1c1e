"""The one exception root of jupyter-aaep, and its first branches.

Every error the package raises on purpose is an :class:`AAEPError` whose message is a sentence
for the person who will read it: what failed and what to do. The branches say who the error is
for; the server turns any of them into an HTTP status in one place
(:mod:`jupyter_aaep.server.http_errors`), so no layer below it knows about HTTP::

    AAEPError
    ├── RequestError   a client sent something wrong (carries its HTTP status)
    ├── ChatError      the chat cannot do that now
    │   ├── UnknownChat
    │   ├── UnknownSession
    │   ├── ChatBusy
    │   ├── InvalidInput
    │   └── SettingLocked   an administrator fixed that setting for everyone
    └── ToolError      a tool failed; the message goes to the model as an error result
        └── NotebookError   the live notebook, its documents or its kernel failed

This module imports nothing, so every layer (``aaep`` excepted: the protocol stays free of
product errors) can use it.
"""

from __future__ import annotations


class AAEPError(Exception):
    """Root of every error jupyter-aaep raises on purpose."""

    @property
    def message(self) -> str:
        return str(self)


class RequestError(AAEPError):
    """A client mistake: the HTTP status and a sentence saying what is wrong and what to do."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class ChatError(AAEPError):
    """The chat runner refused; the message is a plain sentence for the person who asked."""


class UnknownChat(ChatError):
    """No chat has that id."""


class ChatBusy(ChatError):
    """The chat is doing something that rules the request out (a running session, nothing to continue)."""


class UnknownSession(ChatError):
    """The chat has no session with that id."""


class InvalidInput(ChatError):
    """The request itself is wrong (an empty text, an unknown mode)."""


class SettingLocked(ChatError):
    """The server's administrator locked the setting the user tried to change (admin policy)."""


class ToolError(AAEPError):
    """An expected tool failure; its message goes to the model as an ``is_error`` result.

    Write the message for the model and the user alike: what failed and what to do.
    """


class NotebookError(ToolError):
    """Root of the live-notebook failures (documents, kernels)."""


__all__ = [
    "AAEPError",
    "ChatBusy",
    "ChatError",
    "InvalidInput",
    "NotebookError",
    "RequestError",
    "SettingLocked",
    "ToolError",
    "UnknownChat",
    "UnknownSession",
]
