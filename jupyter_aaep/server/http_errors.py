"""The package's errors as HTTP answers: the one place that knows which status each one gets."""

from __future__ import annotations

from tornado import web

from ..errors import AAEPError, ChatBusy, RequestError, SettingLocked, UnknownChat, UnknownSession

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


def http_error(error: AAEPError) -> web.HTTPError:
    """A tornado error carrying the status and the sentence (``{"message": ...}`` in the body)."""
    return web.HTTPError(http_status(error), error.message)
