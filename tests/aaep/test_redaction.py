from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jupyter_aaep.aaep import redaction
from jupyter_aaep.aaep.known_secrets import forget_secrets, remember_secret
from jupyter_aaep.aaep.redaction import (
    is_secret_name,
    mask_for_model,
    mask_secrets,
    redact_arguments,
    restore_masked,
)

SCANNER_WORDS = (
    "password",
    "api_key",
    "secret_key",
    "private_key",
    "bearer ",
    "authorization:",
    "x-api-key",
    "ssh-rsa",
    "ssh-ed25519",
    "begin private key",
    "aws_secret",
    "github_pat_",
    "ghp_",
    "sk-",
)


@pytest.mark.parametrize(
    "text",
    [
        "api_key=sk-test-12345",
        "my key is sk-ant-api03-abcdefghijklmnop",
        "token ghp_abcdefghijklmnopqrstuvwxyz0123",
        "github_pat_11ABCDEFG0123456789_abcdefghijkl",
        "Authorization: Bearer abcdef123456789",
        "AKIAIOSFODNN7EXAMPLE is the access key",
        "password: hunter2",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY-----",
        "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7",
        "xoxb-123456789012-abcdefghij",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "secret_key='abc def'",
    ],
)
def test_secret_values_are_masked_and_scanner_safe(text: str) -> None:
    masked = mask_secrets(text)
    assert masked != text
    lowered = masked.lower()
    for word in SCANNER_WORDS:
        assert word not in lowered, (word, masked)


@pytest.mark.parametrize(
    "text",
    [
        "Plot the task-list of low-risk-items",
        "df.groupby('region').mean()",
        "/home/user/data/file_name_2024.csv",
        "",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert mask_secrets(text) == text


def test_secret_named_arguments_are_dropped_and_counted() -> None:
    redacted = redact_arguments(
        {
            "url": "https://api.example.com",
            "api_key": "x",
            "Password": "y",
            "opts": {"token": "z", "n": 1},
            "tags": ["a", "sk-ab12cd34"],
        }
    )
    assert redacted.hidden_count == 2
    assert redacted.shown == {
        "url": "https://api.example.com",
        "opts": {"n": 1},
        "tags": ["a", "[hidden]"],
    }
    summary = redacted.summary()
    assert summary.endswith("2 sensitive arguments hidden")
    assert "api_key" not in summary.lower() and "password" not in summary.lower()
    assert redact_arguments({}).summary() == "no arguments"
    assert len(redact_arguments({"text": "x" * 1000}).summary(max_length=50)) == 50
    assert redact_arguments({"key_id": "k"}).hidden_count == 0


def test_secret_names() -> None:
    for name in (
        "api_key",
        "apiKey",
        "ACCESS_KEY",
        "client_secret",
        "auth_header",
        "session_token",
        "passwd",
    ):
        assert is_secret_name(name), name
    for name in ("cell_id", "path", "source", "timeout_seconds"):
        assert not is_secret_name(name), name


# -- what the model reads ---------------------------------------------------------------------

KEY = "sk-ant-api03-" + "Qx9" * 10


@pytest.mark.parametrize(
    "text",
    [
        "max_tokens = 100",
        "tokens = text.split()",
        'tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")',
        "commit = '3f786850e387550fdab836ed7e6dc881de23001b'",
        'API_KEY = os.environ["SERVICE_KEY"]',
        "password = getpass.getpass()",
        "auth_mode = 'basic'",
    ],
)
def test_the_model_still_reads_ordinary_code(text: str) -> None:
    assert mask_for_model(text) == (text, [])


def test_the_model_does_not_read_credentials() -> None:
    text = f"key={KEY}\nPASSWORD = 'hunter2'\n{{'HF_TOKEN': 'hf_abcdefghij0123456789'}}"
    masked, hidden = mask_for_model(text)
    assert masked == "key=[hidden]\nPASSWORD = [hidden]\n{'HF_TOKEN': [hidden]}"
    assert hidden == [KEY, "'hunter2'", "'hf_abcdefghij0123456789'"]


def test_remembered_secrets_are_masked_everywhere() -> None:
    plain = "Zp4" * 6  # looks like nothing in particular
    remember_secret(plain)
    try:
        assert mask_for_model(f"value: {plain}.")[0] == "value: [hidden]."
        assert plain not in mask_secrets(f"the value {plain} here")
    finally:
        forget_secrets()
    assert mask_for_model(plain)[0] == plain


def test_an_edit_gets_the_hidden_values_back_in_order() -> None:
    original = f"# a note about [hidden] masks\nA = '{KEY}'\nB = 'hunter22' if x else None\nn = 1"
    masked, _ = mask_for_model(original.replace("B =", "password ="))
    original = original.replace("B =", "password =")
    edited = masked.replace("n = 1", "n = 2")
    assert restore_masked(edited, original) == original.replace("n = 1", "n = 2")
    assert restore_masked("no masks here", original) == "no masks here"
    with pytest.raises(ValueError, match="4 \\[hidden\\] placeholder"):
        restore_masked(edited.replace("n = 2", "[hidden]"), original)


# Pieces that make up texts where a secret pattern may or may not match: each pattern's
# literals (in odd cases, and with the characters Python's re also takes for ASCII letters),
# secret-shaped values, separators, and ordinary code.
_PIECES = [
    "password",
    "PassWord",
    "pa\u017f\u017fword",
    "api_key",
    "ApiKey",
    "secret",
    "token",
    "auth",
    "cookie",
    "signature",
    "session_key",
    "credential",
    "private_key",
    "access-key",
    "pr\u0130vate",
    "\u212aey",
    "sk-",
    "ghp_",
    "github_pat_",
    "xoxb-",
    "AKIA",
    "AIza",
    "eyJ",
    "ssh-rsa ",
    "Bearer ",
    "Authorization: ",
    "-----BEGIN RSA PRIVATE KEY-----",
    "postgresql://admin:",
    "@db",
    " = ",
    ": ",
    "=",
    "'",
    '"',
    "\n",
    " ",
    ".",
    "abcdEFGH1234ijklMNOP5678qrstUVWX9012",
    "x1y2z3w4v5u6t7s8",
    "value_1 = 2",
    "°C",
    "é",
]


@given(st.lists(st.sampled_from(_PIECES), max_size=14))
@settings(max_examples=600, deadline=None)
def test_skipping_patterns_that_cannot_match_changes_nothing(pieces: list[str]) -> None:
    """The literal pre-check is only a shortcut: masking with it equals masking with every
    pattern run on the whole text, for the model and for listeners."""
    text = "".join(pieces)
    every = redaction._worth_scanning
    try:
        redaction._worth_scanning = lambda _text: lambda _pattern: True  # type: ignore[assignment]
        expected = (mask_for_model(text), mask_secrets(text))
    finally:
        redaction._worth_scanning = every  # type: ignore[assignment]
    assert (mask_for_model(text), mask_secrets(text)) == expected
