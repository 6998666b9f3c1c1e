from __future__ import annotations

import pytest

from jupyter_aaep.aaep.redaction import is_secret_name, mask_secrets, redact_arguments

SCANNER_WORDS = ("password", "api_key", "secret_key", "private_key", "bearer ", "authorization:", "x-api-key",
                 "ssh-rsa", "ssh-ed25519", "begin private key", "aws_secret", "github_pat_", "ghp_", "sk-")


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
    ["Plot the task-list of low-risk-items", "df.groupby('region').mean()", "/home/user/data/file_name_2024.csv", ""],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert mask_secrets(text) == text


def test_secret_named_arguments_are_dropped_and_counted() -> None:
    redacted = redact_arguments(
        {"url": "https://api.example.com", "api_key": "x", "Password": "y", "opts": {"token": "z", "n": 1}, "tags": ["a", "sk-ab12cd34"]}
    )
    assert redacted.hidden_count == 2
    assert redacted.shown == {"url": "https://api.example.com", "opts": {"n": 1}, "tags": ["a", "[hidden]"]}
    summary = redacted.summary()
    assert summary.endswith("2 sensitive arguments hidden")
    assert "api_key" not in summary.lower() and "password" not in summary.lower()
    assert redact_arguments({}).summary() == "no arguments"
    assert len(redact_arguments({"text": "x" * 1000}).summary(max_length=50)) == 50
    assert redact_arguments({"key_id": "k"}).hidden_count == 0


def test_secret_names() -> None:
    for name in ("api_key", "apiKey", "ACCESS_KEY", "client_secret", "auth_header", "session_token", "passwd"):
        assert is_secret_name(name), name
    for name in ("cell_id", "path", "source", "timeout_seconds"):
        assert not is_secret_name(name), name
