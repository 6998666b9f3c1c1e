"""The package's errors as HTTP answers: the one place that knows which status each one gets.

Handlers never catch :class:`~jupyter_aaep.errors.AAEPError` themselves: every AAEP handler
mixes in :class:`AAEPErrorAnswers`, so an error raised anywhere in a verb is answered exactly
as ``raise web.HTTPError(status, sentence)`` would be (``{"message": sentence, "reason": …}``
from jupyter_server's ``APIHandler.write_error``) and logged as the client error it is.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

from tornado import web

from ..errors import AAEPError, ChatBusy, RequestError, SettingLocked, UnknownChat, UnknownSession
from ..mcp.credentials import scrubbed

_STATUS_BY_CLASS: tuple[tuple[type[AAEPError], int], ...] = (
    (UnknownChat, 404),
    (UnknownSession, 404),
    (ChatBusy, 409),
    (SettingLocked, 403),
)
"""Checked in order, the first match wins; any other error is the client's request (400)."""


def http_status(error: AAEPError) -> int:
    """The status an error answers with: a ``RequestError`` names its own."""
    if isinstance(error, RequestError):
        return error.status
    for cls, status in _STATUS_BY_CLASS:
        if isinstance(error, cls):
            return status
    return 400


class _SentenceError(web.HTTPError):
    """An ``HTTPError`` whose message is a finished sentence, not a %-format.

    tornado doubles every ``%`` of a message given without arguments (it will be %-formatted
    for the log), and jupyter_server's ``APIHandler.write_error`` sends that doubled text, so
    a person would read "Use %%aaep". This one keeps the sentence as written.
    """

    def __init__(self, status: int, sentence: str) -> None:
        self.sentence = sentence
        super().__init__(status, sentence)

    @property
    def log_message(self) -> str:
        return self.sentence

    @log_message.setter
    def log_message(self, value: str | None) -> None:
        """tornado before 6.5 assigns the attribute in ``__init__``; the sentence stays."""


def http_error(error: AAEPError) -> web.HTTPError:
    """A tornado error carrying the status and the sentence (``{"message": ...}`` in the body)."""
    return _SentenceError(http_status(error), error.message)


class AAEPErrorAnswers(web.RequestHandler):
    """Mixed in ahead of jupyter_server's handler classes: an ``AAEPError`` escaping a verb
    becomes :func:`http_error`'s answer, in the body shape the handler's own ``write_error``
    gives any ``HTTPError``, instead of tornado's "500 Unhandled error"."""

    def log_exception(
        self,
        typ: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if isinstance(value, AAEPError):  # a 4xx warning without a traceback, not an error
            value = http_error(value)
            typ = type(value)
        super().log_exception(typ, value, tb)

    def _request_summary(self) -> str:
        return scrubbed(super()._request_summary())  # a token in the address stays out of the log

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        exc_info = kwargs.get("exc_info")
        if exc_info is not None and isinstance(exc_info[1], AAEPError):
            error = http_error(exc_info[1])
            status_code = error.status_code
            self.set_status(status_code)  # tornado set 500 before asking for the body
            kwargs["exc_info"] = (type(error), error, exc_info[2])
        super().write_error(status_code, **kwargs)
