"""Standing permissions over HTTP and from the approval card: who may give one, and the list.

Only the person may give the agent a permission. Two ways reach here:

- the approval card's extra choice: a ``confirmation.reply`` carrying our own field ``grant``
  (``{"rule", "scope"}``, popped before the reply is checked, like ``stream_key``). It is
  granted only when the reply came from the person's own view (the panel, or the notebook
  through the panel: :mod:`.reply_origin`), only what that card offered, and only if the reply
  approved the step. An outside agent, or a program with the login but no panel key, still
  answers as before; its grant is refused and said in the chat.
- ``POST /aaep/v1/permissions`` with the panel's ``stream_key``: without it, 403.

Anyone with the login may list and revoke (taking a permission back is always safe); outside
agents' MCP credentials open none of these routes (:mod:`.base`). A program that sets out to
imitate the panel can get a key as the panel does: docs/security.md says what this is not.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from ..agent.grant_book import GrantBook
from ..agent.grants import EFFECTS, SCOPE_HELP, Grant, GrantError, rule_words, scope_words
from ..chats.chat import Chat
from ..errors import RequestError, SettingLocked
from .messages import Response
from .reply_origin import KEY_FIELD, StreamKeys, tell

log = logging.getLogger(__name__)

GRANT_FIELD = "grant"
_POST_FIELDS = {"rule", "scope", "notebook_path", "chat_id", "effect", KEY_FIELD}
EXAMPLE = (
    '{"rule": "run_cell:unflagged", "scope": "notebook", "notebook_path": "analysis.ipynb", '
    '"stream_key": "key_…"}'
)
NOT_THE_PERSON = (
    'Only you can give the agent a standing permission: choose "don\'t ask again" on an '
    "approval card in the panel, or send the panel's stream_key. A program using your Jupyter "
    "login, an outside agent or code in a notebook cannot give itself one. Nothing was changed."
)
OFF = "Standing permissions are not kept on this server (the agent is not set up)."


class Permissions:
    """The book of grants as the server offers it."""

    def __init__(
        self,
        book: GrantBook,
        keys: StreamKeys,
        chat_title: Callable[[str], str | None] = lambda _chat_id: None,
    ) -> None:
        self.book = book
        self.keys = keys
        self.chat_title = chat_title
        """A chat's title (its first request), to name a chat's permission in the list."""

    # -- the list -------------------------------------------------------------------------------
    def listing(self) -> dict[str, Any]:
        grants = self.book.listing()
        titles = {g.id: self._title(g) for g in grants}
        listed = [{**g.to_json(titles[g.id]), "applies": self.book.applies(g)} for g in grants]
        return {"permissions": listed, "sentence": list_sentence(grants, titles)}

    def _title(self, grant: Grant) -> str | None:
        return self.chat_title(grant.chat_id) if grant.scope == "chat" and grant.chat_id else None

    # -- over HTTP ------------------------------------------------------------------------------
    def add(self, body: Any) -> Response:
        if not isinstance(body, Mapping):
            raise RequestError(400, f"Send a JSON object, such as {EXAMPLE}.")
        unknown = sorted(set(body) - _POST_FIELDS)
        if unknown:
            raise RequestError(
                400,
                f"Unknown field {', '.join(map(repr, unknown))}; send rule, scope and, as the "
                f"scope needs, notebook_path or chat_id (optionally effect: allow or deny), "
                f"such as {EXAMPLE}.",
            )
        if not self.keys.person(body.get(KEY_FIELD)):
            raise RequestError(403, NOT_THE_PERSON)
        effect = body.get("effect", "allow")
        if effect not in EFFECTS:
            raise RequestError(400, "effect is 'allow' (the default) or 'deny'.")
        notebook_path = _path(body.get("notebook_path"))
        chat_id = body.get("chat_id")
        if chat_id is not None and not (isinstance(chat_id, str) and 0 < len(chat_id) <= 200):
            raise RequestError(400, f"chat_id is the id of a chat, as a string. {SCOPE_HELP}")
        try:
            grant = self.book.add(
                body.get("rule"),
                body.get("scope"),
                effect=effect,
                chat_id=chat_id,
                notebook_path=notebook_path,
                granted_in=notebook_path,
            )
        except GrantError as error:
            raise RequestError(400, f"{error} Send, for example, {EXAMPLE}.") from error
        except OSError as error:
            raise RequestError(
                500, f"The permission could not be saved ({error}); nothing was changed."
            ) from error
        return Response(201, grant.to_json())

    def revoke(self, grant_id: str) -> Response:
        try:
            grant = self.book.revoke(grant_id)
        except OSError as error:
            raise RequestError(
                500, f"The permission could not be removed ({error}); it still applies."
            ) from error
        if grant is None:
            raise RequestError(
                404,
                "No permission has that id; it may have been taken back already. "
                "GET /aaep/v1/permissions lists them.",
            )
        return Response(204)

    # -- from the approval card ------------------------------------------------------------------
    def from_reply(
        self,
        wish: Any,
        message: Mapping[str, Any],
        chat: Chat,
        person: bool,
        resolved: bool,
    ) -> Grant | None:
        """A reply that carried ``grant``: give it if the person sent it, approving, and it is
        what the card offered; otherwise say why not in the chat."""
        offered = self.book.take_offer(message.get("reply_token"), wish)
        if not resolved or message.get("decision") != "accept" or offered is None:
            return None
        if not person:
            said = (
                "A program using your Jupyter login asked for a standing permission with its "
                "answer; it was not given. Only you can give one, in the panel."
            )
            log.warning("AAEP chat %s: %s", chat.chat_id, said)
            tell(chat, said, "Permission refused.")
            return None
        try:
            grant = self.book.add(
                offered.offer.rule,
                offered.offer.scope,
                chat_id=offered.chat_id,
                notebook_path=offered.notebook_path,
                granted_in=chat.notebook_path,
                label=offered.offer.label,
            )
        except SettingLocked as error:  # the administrator locked it since the card was shown
            tell(chat, str(error), "Permission not given.")
            return None
        except (GrantError, OSError) as error:
            tell(chat, f"The permission was not saved: {error}", "Permission not saved.")
            return None
        tell(
            chat,
            f"Permission given: the agent no longer asks before {rule_words(grant.rule, grant.label)} "
            f"{scope_words(grant.scope, grant.notebook_path, here=True)}. To take it back, use "
            "the command What may the agent do without asking?",
            "Permission given.",
        )
        return grant


def take_grant_field(message: dict[str, Any]) -> Any:
    """Remove and return a reply's ``grant`` (ours, not AAEP's: a reply's fields are closed)."""
    return message.pop(GRANT_FIELD, None)


def list_sentence(grants: list[Grant], chat_titles: Mapping[str, str | None] | None = None) -> str:
    """The list, spoken: "The agent may do 2 things without asking: 1. … 2. …" (a chat's
    permission names the chat by its title, from *chat_titles* by grant id)."""
    if not grants:
        return "The agent asks before every step that needs approval: you have given no standing permissions."
    titles = chat_titles or {}
    items = " ".join(f"{n}. {g.sentence(titles.get(g.id))}" for n, g in enumerate(grants, 1))
    count = len(grants)
    return f"{count} standing permission{'s' if count != 1 else ''}: {items}"


def _path(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > 1024:
        raise RequestError(
            400, "notebook_path is the notebook's path in the Jupyter root, such as analysis.ipynb."
        )
    return value.strip().lstrip("/")


__all__ = ["GRANT_FIELD", "OFF", "Permissions", "list_sentence", "take_grant_field"]
