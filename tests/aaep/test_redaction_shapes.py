"""Secret shapes a data scientist has (issue 25): Hugging Face tokens, Stripe secret and
restricted keys, 40-character AWS secret access keys next to an AWS name or an access key id,
and quoted ``'NAME': 'value'`` pairs, hidden from the model and from listeners alike."""

from __future__ import annotations

import json
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jupyter_aaep.aaep import redaction
from jupyter_aaep.aaep.redaction import mask_for_model, mask_secrets

# Built here so no literal secret sits in the source.
HF = "hf_" + "QwErTyUiOp" * 3 + "AsDf"
AWS_KEY = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCY" + "Ab12Cd34Ef"
AWS_ID = "AKIA" + "Z7Q2" * 4


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"login(token={HF!r})", HF),
        (f"HfApi(token={HF})", HF),
        ("stripe.api_key = 'sk_live_" + "51Hx" * 6 + "'", "sk_live_" + "51Hx" * 6),
        ("charge with rk_live_" + "aB3" * 5, "rk_live_" + "aB3" * 5),
        ("sk_test_" + "4eC39HqLyjWDarjtT1zdp7dc", "sk_test_" + "4eC39HqLyjWDarjtT1zdp7dc"),
        ("rk_test_" + "9zYx" * 5 + " used", "rk_test_" + "9zYx" * 5),
        (f"{{'AWS_SECRET_ACCESS_KEY': '{AWS_KEY}'}}", AWS_KEY),
        (f'{{"SecretAccessKey": "{AWS_KEY}", "AccessKeyId": "{AWS_ID}"}}', AWS_KEY),
        (f"aws_secret_access_key = {AWS_KEY}", AWS_KEY),
        (f"[default]\naws_access_key_id = {AWS_ID}\naws_secret_access_key = {AWS_KEY}\n", AWS_KEY),
        (f"Access key ID,Secret access key\n{AWS_ID},{AWS_KEY}\n", AWS_KEY),
        (f"{AWS_ID} {AWS_KEY}", AWS_KEY),
        (f"export AWS_SECRET_ACCESS_KEY={AWS_KEY}", AWS_KEY),
    ],
)
def test_new_shapes_are_hidden_from_the_model_and_listeners(text: str, secret: str) -> None:
    masked, hidden = mask_for_model(text)
    assert secret not in masked and "[hidden]" in masked, masked
    assert any(secret in value for value in hidden)
    assert secret not in mask_secrets(text)


def test_listeners_hear_a_printed_dict_without_the_name_or_the_value_and_json_stays_json() -> None:
    assert (
        mask_secrets("{'password': 'hunter2', 'user': 'ana'}")
        == "{'[hidden]': '[hidden]', 'user': 'ana'}"
    )
    assert mask_secrets(f"{{'AWS_SECRET_ACCESS_KEY': '{AWS_KEY}'}}") == "{'[hidden]': '[hidden]'}"
    shown = mask_secrets('{"path": "a", "api_key": "x1", "n": 2}')
    assert json.loads(shown) == {"path": "a", "[hidden]": "[hidden]", "n": 2}


def test_the_model_still_reads_the_name_next_to_the_hidden_value() -> None:
    text = f"{{'AWS_SECRET_ACCESS_KEY': '{AWS_KEY}', 'region': 'eu-west-1'}}"
    assert mask_for_model(text)[0] == "{'AWS_SECRET_ACCESS_KEY': [hidden], 'region': 'eu-west-1'}"


@pytest.mark.parametrize(
    "text",
    [
        "from huggingface_hub import hf_hub_download\nhf_hub_download(repo_id='gpt2')",
        "hf_transformers_cache_dir_for_experiments_2024 = 1",
        "stripe.api_base = 'https://api.stripe.com'\npk_live_key_is_public = True",
        "commit = '3f786850e387550fdab836ed7e6dc881de23001b'",
        "df = pd.read_csv('s3://bucket/sales.csv')  # region asia-east1",
        "The Asia region grew 12% (AsiaPacificRegionalSalesTotals2024Q1Q2Q3Q4ab)",
    ],
)
def test_ordinary_code_the_model_reads_is_left_alone(text: str) -> None:
    assert mask_for_model(text) == (text, [])


_BASE64 = string.ascii_letters + string.digits + "/+"
_CONTEXT = st.text(alphabet=string.ascii_letters + string.digits + " =:,'\"\n_-.", max_size=30)


@st.composite
def _shaped_secret(draw: st.DrawFn) -> tuple[str, str]:
    """A secret of one of the new shapes, written as it appears, and the value to hide."""
    kind = draw(st.sampled_from(["hf", "stripe", "aws_name", "aws_id", "quoted"]))
    if kind == "hf":
        body = draw(st.text(alphabet=string.ascii_letters, min_size=32, max_size=40))
        body = "Ab" + body  # both cases, as Hugging Face writes them
        return f"hf_{body}", f"hf_{body}"
    if kind == "stripe":
        prefix = draw(st.sampled_from(["sk_live_", "rk_live_", "sk_test_", "rk_test_"]))
        body = draw(st.text(alphabet=string.ascii_letters + string.digits, min_size=8, max_size=40))
        return prefix + body, prefix + body
    key = draw(st.text(alphabet=_BASE64, min_size=40, max_size=40))
    if kind == "aws_name":
        name = draw(
            st.sampled_from(["aws_secret_access_key", "AWS_SECRET_ACCESS_KEY", "SecretAccessKey"])
        )
        separator = draw(st.sampled_from([" = ", "=", ": ", "': '", '": "']))
        return f"{name}{separator}{key}", key
    if kind == "aws_id":
        ident = draw(st.sampled_from(["AKIA", "ASIA"])) + draw(
            st.text(alphabet=string.ascii_uppercase + string.digits, min_size=16, max_size=16)
        )
        separator = draw(st.sampled_from([",", " ", "\t", "\n", "', '"]))
        return f"{ident}{separator}{key}", key
    return f"{{'AWS_SECRET_ACCESS_KEY': '{key}'}}", key


@given(_CONTEXT, _shaped_secret(), _CONTEXT)
@settings(max_examples=400, deadline=None)
def test_every_new_shape_is_hidden_wherever_it_stands(
    before: str, secret: tuple[str, str], after: str
) -> None:
    written, value = secret
    # Text touching the secret could make it part of a longer word; a separator keeps it one.
    text = f"{before} {written} {after}"
    assert value not in mask_for_model(text)[0], text
    assert value not in mask_secrets(text), text


@given(
    st.lists(
        st.sampled_from(
            [
                "hf_",
                "HF_",
                "sk_live_",
                "rk_test_",
                "Sk_Live_",
                "aws_secret_access_key",
                "SecretAccessKey",
                "AKIA",
                "ASIA",
                "asia",
                "': '",
                " = ",
                ",",
                "\n",
                "'",
                AWS_KEY,
                "QwErTyUiOp" * 4,
                "51Hx51Hx",
                "x" * 40,
                "°C",
            ]
        ),
        max_size=12,
    )
)
@settings(max_examples=400, deadline=None)
def test_skipping_the_new_patterns_when_their_literal_is_missing_changes_nothing(
    pieces: list[str],
) -> None:
    text = "".join(pieces)
    every = redaction._worth_scanning
    try:
        redaction._worth_scanning = lambda _text: lambda _pattern: True  # type: ignore[assignment]
        expected = (mask_for_model(text), mask_secrets(text))
    finally:
        redaction._worth_scanning = every  # type: ignore[assignment]
    assert (mask_for_model(text), mask_secrets(text)) == expected
