"""Real tools for the conformance run, loaded through ``c.AAEPExtension.extra_tools``.

The official AAEP suite asks the agent to fetch data, book a meeting room, send an email and
delete a record. These tools do those things against an in-memory office (nothing leaves the
process), with the risk metadata a real implementation would declare, so the confirmations,
defaults and events the suite sees come from the ordinary approval path:

- ``fetch_data``: read-only, no confirmation;
- ``book_meeting_room``, ``send_email``: medium risk, irreversible (confirm; default reject);
- ``delete_record``: high risk, irreversible (confirm; default reject, long timeout).

``extra_tools = ["jupyter_aaep.testing.conformance_tools:CONFORMANCE_TOOLS"]`` loads them all.
"""

from __future__ import annotations

from ..agent.tools import ActionPreview, ToolResult, aaep_tool
from ..errors import ToolError

_BOOKINGS: list[tuple[str, str]] = []
_OUTBOX: list[tuple[str, str]] = []
_RECORDS: dict[str, str] = {"12345": "Customer 12345", "67890": "Customer 67890"}
_SAMPLE = [
    {"city": "Lagos", "rain_mm": 12},
    {"city": "Accra", "rain_mm": 3},
    {"city": "Nairobi", "rain_mm": 7},
]


@aaep_tool(read_only=True, label="fetch data")
def fetch_data(
    source: str = "sample", url: str | None = None, api_key: str | None = None
) -> ToolResult:
    """Fetch a small table of data, from the built-in sample or from a web service.

    Parameters
    ----------
    source : str
        Name of the built-in data set; "sample" is the only one.
    url : str, optional
        A web service to read instead (only recorded here, never called).
    api_key : str, optional
        Credential for the web service.
    """
    if source != "sample" and url is None:
        raise ToolError(f"There is no data set called {source!r}; use 'sample'.")
    where = "the web service" if url else "the sample data set"
    rows = "\n".join(f"{row['city']}: {row['rain_mm']} mm of rain" for row in _SAMPLE)
    return ToolResult(
        content=f"{len(_SAMPLE)} rows from {where}:\n{rows}",
        summary=f"Fetched {len(_SAMPLE)} rows.",
    )


@aaep_tool(risk_level="medium", irreversible=True, label="book a meeting room")
def book_meeting_room(room: str, when: str) -> ToolResult:
    """Book a meeting room; invitations go out at once and cannot be recalled.

    Parameters
    ----------
    room : str
        The room, e.g. "Room A".
    when : str
        Date and time, as the user said it, e.g. "tomorrow at 2pm".
    """
    _BOOKINGS.append((room, when))
    return ToolResult(content=f"Booked {room} for {when}.", summary=f"Booked {room} for {when}.")


@book_meeting_room.preview
def _preview_booking(room: str, when: str) -> ActionPreview:
    return ActionPreview(
        summary=f"Booking {room} for {when}.",
        terse=f"Book {room}.",
        action=f"Book {room} for {when}.",
        consequence="The room is reserved in your name and invitations are sent; this cannot be undone here.",
    )


@aaep_tool(risk_level="medium", irreversible=True, label="send an email")
def send_email(to: str, subject: str, body: str) -> ToolResult:
    """Send an email; once sent it cannot be taken back.

    Parameters
    ----------
    to : str
        The recipient's address.
    subject : str
        The subject line.
    body : str
        The message text.
    """
    _OUTBOX.append((to, subject))
    return ToolResult(content=f"Sent '{subject}' to {to}.", summary=f"Email sent to {to}.")


@send_email.preview
def _preview_email(to: str, subject: str, body: str) -> ActionPreview:
    return ActionPreview(
        summary=f"Sending an email to {to}.",
        terse="Send email.",
        action=f"Send the email '{subject}' to {to}.",
        consequence="The recipient receives it immediately; a sent email cannot be recalled.",
    )


@aaep_tool(risk_level="high", irreversible=True, label="delete a record")
def delete_record(record_id: str) -> ToolResult:
    """Delete a customer record permanently.

    Parameters
    ----------
    record_id : str
        The record's id, e.g. "12345".
    """
    if record_id not in _RECORDS:
        raise ToolError(f"There is no record {record_id}.")
    del _RECORDS[record_id]
    return ToolResult(
        content=f"Deleted record {record_id}.", summary=f"Record {record_id} deleted."
    )


@delete_record.preview
def _preview_delete(record_id: str) -> ActionPreview:
    return ActionPreview(
        summary=f"Deleting record {record_id}.",
        terse=f"Delete record {record_id}.",
        action=f"Delete record {record_id} permanently.",
        consequence="The record and its history are erased; there is no backup to restore it from.",
    )


CONFORMANCE_TOOLS = (fetch_data, book_meeting_room, send_email, delete_record)
"""Every tool here, for one ``extra_tools`` entry."""
