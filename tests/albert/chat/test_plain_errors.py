"""A failed model step in plain words with what to do, the detail apart, one log line."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from albert.ai.gateway_errors import http_error
from albert.ai.model import ModelError, ModelEvent, ModelRequest
from albert.ai.openai_client import _retry_after
from albert.ai.plain_errors import endpoint_host, explain_model_error
from albert.composition import build_chat_service
from miniflare import install_shims
from tests.support.object_sql import object_sql
from tests.support.sockets import RecordingSockets

install_shims()

KEY = "sk-live-abcdef123456"
BASE = "https://gw.example.com:8443/v1/account-7/secret-path"


def explain(error: ModelError) -> tuple[str, str]:
    plain = explain_model_error(error, base_url=BASE, model_name="gpt-x", secrets=(KEY,))
    return plain.message, plain.detail


@pytest.mark.parametrize(
    ("error", "says"),
    [
        (
            ModelError("network", "cannot reach the model gateway (ConnectError)"),
            ["could not reach", "gw.example.com:8443", "MODEL_BASE_URL"],
        ),
        (ModelError("timeout", "the model gateway did not answer in time"), ["in time"]),
        (http_error(401, "bad key", [KEY]), ["refused Albert's key", "MODEL_API_KEY"]),
        (http_error(403, "no", [KEY]), ["MODEL_API_KEY"]),
        (http_error(404, "no such model", [KEY]), ['"gpt-x"', "MODEL_NAME"]),
        (http_error(429, "slow down", [KEY], retry_after=7), ["Wait about 7 s", "try again"]),
        (
            ModelError("rate_limited", "this product's model budget is used up", retry_after=3),
            ["budget", "Wait about 3 s"],
        ),
        (http_error(503, "down", [KEY]), ["had a problem", "Try again"]),
        (http_error(400, "bad tools", [KEY]), ["rejected the request"]),
        (ModelError("stream_cut", "the model stream was cut off"), ["broke off", "Try again"]),
        (
            ModelError("bad_response", "the model sent a malformed stream chunk"),
            ["could not read", "OpenAI-compatible", "MODEL_NAME"],
        ),
        (ModelError("http", "no model is configured"), ["No model is set up", "MODEL_BASE_URL"]),
    ],
)
def test_each_class_says_what_to_do_with_the_detail_apart(
    error: ModelError, says: list[str]
) -> None:
    message, detail = explain(error)
    for words in says:
        assert words in message, message
    # The technical words stay in the detail; no secret or path anywhere.
    assert str(error) in detail and error.kind in detail
    for text in (message, detail):
        assert KEY not in text and "account-7" not in text and "secret-path" not in text
    assert "model_error" not in message and "HTTP" not in message


def test_the_gateways_own_body_stays_out_of_the_detail() -> None:
    error = http_error(500, f"internal db-7.internal echoed {KEY}", [KEY])
    assert "db-7" in error.gateway_said and KEY not in error.gateway_said
    _, detail = explain(error)
    assert "db-7" not in detail and "HTTP 500" in detail


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("https://user:pw@api.openai.com/v1", "api.openai.com"),
        ("http://127.0.0.1:9/v1", "127.0.0.1:9"),
        ("http://[::1]:11434/v1", "[::1]:11434"),
        ("", ""),
        ("http://:bad", ""),
    ],
)
def test_the_host_is_named_without_user_info_or_path(url: str, host: str) -> None:
    assert endpoint_host(url) == host


class FailingModel:
    """A model whose every step fails with `error`."""

    model_name = "gpt-x"

    def __init__(self, error: ModelError) -> None:
        self.error = error

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        raise self.error
        yield  # an async generator


async def failed_turn(tmp_path: Path, error: ModelError) -> tuple[list[dict[str, Any]], Any]:
    """One turn whose model fails with `error`: the frames sent, and its stored end."""
    sockets = RecordingSockets()
    env = {"ALBERT_MODE": "local", "MODEL_BASE_URL": BASE, "MODEL_API_KEY": KEY}
    async with httpx.AsyncClient() as http:
        service = build_chat_service(
            sql=object_sql(tmp_path / "o.sqlite"),
            hub=sockets,
            env=env,
            http=http,
            model=FailingModel(error),
        )
        service.store.create_thread("t1", "Named")
        frame = {"type": "chat", "thread_id": "t1", "message_id": "m1", "text": "hello"}
        await service.handle_frame(sockets, json.dumps(frame))
        return sockets.frames, service.store.all_messages("t1")[-1]


async def test_a_failed_turn_sends_plain_words_and_logs_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        frames, _ = await failed_turn(tmp_path, http_error(401, f"invalid key {KEY}", [KEY]))
    errors: list[dict[str, Any]] = [f for f in frames if f["type"] == "error"]
    assert len(errors) == 1
    error = errors[0]
    assert error["code"] == "model_error" and not error["retryable"]
    assert "MODEL_API_KEY" in error["message"] and "gw.example.com:8443" in error["message"]
    assert "HTTP 401" in error["detail"]
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    line = warnings[0].getMessage()
    assert "\n" not in line and "HTTP 401" in line and "invalid key" in line
    assert KEY not in line and KEY not in json.dumps(frames)


async def test_a_rate_limited_turn_says_when_to_try_again_and_keeps_it(tmp_path: Path) -> None:
    frames, ended = await failed_turn(tmp_path, http_error(429, "slow down", [KEY], retry_after=7))
    [error] = [f for f in frames if f["type"] == "error"]
    assert error["code"] == "rate_limited" and error["retryable"]
    assert error["retry_after_seconds"] == 7 and "Wait about 7 s" in error["message"]
    # The stored end carries what the browser was told, for a reload.
    assert ended.meta["error"] == {
        "code": "rate_limited",
        "message": error["message"],
        "detail": error["detail"],
        "retryable": True,
    }


@pytest.mark.parametrize(
    "url",
    [
        "https://gw.example.com;key=AIzaSyQUERYKEY1/v1",
        "https://gw.example.com%3Bkey=AIzaSyQUERYKEY1/v1",
        "https://[::1%25AIzaSyQUERYKEY1]/v1",
    ],
)
def test_a_host_with_more_than_a_name_in_it_is_not_shown(url: str) -> None:
    assert endpoint_host(url) == ""
    plain = explain_model_error(
        ModelError("network", "cannot reach"), base_url=url, model_name="m", secrets=(KEY,)
    )
    for text in plain:
        assert "QUERYKEY" not in text.upper(), text


def test_an_error_that_repeats_the_address_keeps_its_credentials_out() -> None:
    url = "https://user:pw-hunter2@gw.example.com/v1/account-7?key=AIzaSyQUERYKEY1&sig=a%2Bb9z"
    for error in (
        ModelError("network", f"cannot reach {url}"),
        ModelError("http", "the model gateway stopped: bad key AIzaSyQUERYKEY1", status=502),
        ModelError("http", "denied for user pw-hunter2 with sig a+b9z", status=401),
    ):
        plain = explain_model_error(error, base_url=url, model_name="m", secrets=(KEY,))
        for text in plain:
            for secret in ("pw-hunter2", "QUERYKEY1", "a+b9z", "account-7"):
                assert secret not in text, text
        assert "gw.example.com" in plain.detail


@pytest.mark.parametrize("after", [float("inf"), float("nan"), -5.0, 0.0, 1e12])
def test_a_wait_that_is_no_wait_is_not_told(after: float) -> None:
    error = http_error(429, "slow down", [KEY], retry_after=after)
    message, _ = explain(error)
    assert "Wait a moment" in message, message


@pytest.mark.parametrize(
    ("header", "after"), [("7", 7.0), ("nan", None), ("inf", None), ("-5", None)]
)
def test_a_retry_after_header_that_says_no_wait_is_dropped(
    header: str, after: float | None
) -> None:
    response = httpx.Response(429, headers={"retry-after": header})
    assert _retry_after(response) == after
