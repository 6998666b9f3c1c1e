"""What a person can do when the model service fails: AAEP error fields per SDK exception.

Exception tree handled here (from the anthropic SDK)::

    AnthropicError
    ├── APIError
    │   ├── APIStatusError ── BadRequestError 400, AuthenticationError 401,
    │   │                     PermissionDeniedError 403, NotFoundError 404,
    │   │                     RateLimitError 429, InternalServerError 5xx (OverloadedError 529)
    │   └── APIConnectionError ── APITimeoutError
    └── (missing credentials are raised as a plain AnthropicError or TypeError)
"""

from __future__ import annotations

from dataclasses import dataclass

from ..aaep.events import ErrorCategory
from ..aaep.redaction import mask_secrets
from ..words import duration_words


@dataclass(frozen=True)
class ModelFailure:
    """The ``session.errored`` fields for one failure."""

    category: ErrorCategory
    code: str
    recoverable: bool
    message: str
    """One sentence for a listener: what failed."""
    hint: str
    """What to do about it."""
    request_id: str | None = None


def describe_model_error(error: BaseException, *, model: str) -> ModelFailure:
    import anthropic  # here, not at the top: a server nobody asked yet never loads the SDK

    request_id = getattr(error, "request_id", None)
    detail = _api_message(error)
    if isinstance(error, anthropic.AuthenticationError):
        return ModelFailure(
            "requires_user",
            "MODEL_AUTH_FAILED",
            False,
            "The model service rejected the API key.",
            "Set a valid key in the ANTHROPIC_API_KEY environment variable of the Jupyter server and restart it.",
            request_id,
        )
    if isinstance(error, anthropic.PermissionDeniedError) and _over_budget(error) and detail:
        # A model gateway (jupyter_aaep.hub.gateway) refusing a user over their spending limit.
        return ModelFailure(
            "requires_user",
            "MODEL_BUDGET_EXCEEDED",
            False,
            detail,
            "Ask your JupyterHub administrator to raise your model budget.",
            request_id,
        )
    if isinstance(error, anthropic.PermissionDeniedError):
        return ModelFailure(
            "requires_user",
            "MODEL_PERMISSION_DENIED",
            False,
            "This API key is not allowed to use the model.",
            f"Check that your Anthropic account has access to the model {model}, or choose another model with c.AAEPExtension.model.",
            request_id,
        )
    if isinstance(error, anthropic.NotFoundError):
        return ModelFailure(
            "requires_user",
            "MODEL_NOT_FOUND",
            False,
            f"The model {model} was not found.",
            "Set an existing model name with c.AAEPExtension.model (or --AAEPExtension.model=...) and restart Jupyter.",
            request_id,
        )
    if isinstance(error, anthropic.RateLimitError):
        wait = _retry_after(error)
        return ModelFailure(
            "transient",
            "MODEL_RATE_LIMITED",
            True,
            "The model service is rate limiting requests from this key.",
            f"Wait {wait} and send your request again."
            if wait
            else "Wait a minute and send your request again.",
            request_id,
        )
    if isinstance(error, anthropic.InternalServerError):
        overloaded = getattr(error, "status_code", 0) == 529 or "overloaded" in detail.lower()
        return ModelFailure(
            "transient",
            "MODEL_OVERLOADED" if overloaded else "MODEL_SERVICE_ERROR",
            True,
            "The model service is overloaded right now."
            if overloaded
            else "The model service had an internal error.",
            "Try again in a few minutes; nothing in your notebook was lost.",
            request_id,
        )
    if isinstance(error, anthropic.APITimeoutError):
        return ModelFailure(
            "transient",
            "MODEL_TIMEOUT",
            True,
            "The model service did not answer in time.",
            "Check your network connection and try again.",
        )
    if isinstance(error, anthropic.APIConnectionError):
        return ModelFailure(
            "transient",
            "MODEL_UNREACHABLE",
            True,
            "Could not connect to the model service.",
            "Check the network connection of the Jupyter server, and ANTHROPIC_BASE_URL if you set one, then try again.",
        )
    if isinstance(error, anthropic.BadRequestError):
        return ModelFailure(
            "permanent",
            "MODEL_BAD_REQUEST",
            False,
            f"The model service rejected the request: {detail}"
            if detail
            else "The model service rejected the request.",
            "Start a new chat if the conversation has become too long; otherwise report this as a bug.",
            request_id,
        )
    if isinstance(error, anthropic.APIStatusError) and _error_type(error) in _MID_STREAM:
        # An ``event: error`` inside a stream that was answered 200: the type says what it was.
        code, message = _MID_STREAM[_error_type(error)]
        return ModelFailure(
            "transient",
            code,
            True,
            message,
            "Send your request again in a minute; what the agent did before it stopped is kept.",
            request_id,
        )
    if isinstance(error, anthropic.APIStatusError):
        status = getattr(error, "status_code", "unknown")
        return ModelFailure(
            "unknown",
            "MODEL_HTTP_ERROR",
            True,
            f"The model service answered with HTTP status {status}.",
            "Try again; if it keeps failing, check the server log for the request id.",
            request_id,
        )
    if _is_transport_error(error):
        return ModelFailure(
            "transient",
            "MODEL_CONNECTION_LOST",
            True,
            "The connection to the model service was lost in the middle of the answer.",
            "Check the network connection of the Jupyter server and send your request again.",
        )
    text = str(error).lower()
    if "api_key" in text or "auth" in text or "credential" in text:
        return ModelFailure(
            "requires_user",
            "MODEL_API_KEY_MISSING",
            False,
            "No API key is configured for the model service.",
            "Set the ANTHROPIC_API_KEY environment variable before starting Jupyter, then restart the server. "
            "To try the agent without an account, run scripts/start --offline from a clone of jupyter-aaep: "
            "it starts JupyterLab with the offline demo model.",
        )
    return ModelFailure(
        "unknown",
        "AGENT_INTERNAL_ERROR",
        False,
        "The agent failed unexpectedly.",
        "Try again; if it happens again, the server log has the details.",
    )


def _is_transport_error(error: BaseException) -> bool:
    """The SDK's HTTP layer (httpx or its fork) raises its own errors when a stream breaks."""
    for cls in type(error).__mro__:
        if cls.__name__ in ("TransportError", "StreamError") and cls.__module__.split(".")[
            0
        ].startswith("httpx"):
            return True
    return False


def _over_budget(error: BaseException) -> bool:
    response = getattr(error, "response", None)
    return response is not None and response.headers.get("x-aaep-budget") == "exceeded"


def _api_message(error: BaseException) -> str:
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error")
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return mask_secrets(inner["message"])[:300]
    return ""


_MID_STREAM = {
    "overloaded_error": (
        "MODEL_OVERLOADED",
        "The model service became overloaded in the middle of the answer.",
    ),
    "api_error": (
        "MODEL_SERVICE_ERROR",
        "The model service had an internal error in the middle of the answer.",
    ),
    "rate_limit_error": (
        "MODEL_RATE_LIMITED",
        "The model service started rate limiting in the middle of the answer.",
    ),
}


def _error_type(error: BaseException) -> str:
    body = getattr(error, "body", None)
    inner = body.get("error") if isinstance(body, dict) else None
    return str(inner.get("type")) if isinstance(inner, dict) else ""


def _retry_after(error: BaseException) -> str | None:
    response = getattr(error, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        seconds = int(float(value)) if value is not None else None
    except ValueError:
        return None
    if seconds is None or seconds <= 0:
        return None
    return duration_words(seconds, short=False)
