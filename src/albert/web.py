"""Runtime-neutral HTTP request/response values the core routes on."""

import json
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from albert.protocol.http import ErrorBody, FieldError
from albert.validation import validation_fields, validation_message


class HttpRequest(BaseModel):
    """An HTTP request as the core sees it (adapters build it from the platform's)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    method: str
    path: str
    query: dict[str, str] = Field(default_factory=dict)
    query_string: str = Field(
        "", description="The query as sent, for routes that must see a repeated parameter"
    )
    headers: dict[str, str] = Field(default_factory=dict, description="Lower-case names")
    body: bytes = b""
    base_url: str = Field(
        "", description="Scheme and host the request was made to (`https://host`), if known"
    )


class HttpResponse(BaseModel):
    """An HTTP response from the core; the adapter turns it into the platform's."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = Field(default_factory=dict)

    @classmethod
    def json(
        cls, payload: Any, status: int = 200, headers: dict[str, str] | None = None
    ) -> "HttpResponse":
        """A JSON response from a pydantic model or plain data."""
        if isinstance(payload, BaseModel):
            text = payload.model_dump_json()
        else:
            text = json.dumps(payload)
        return cls(
            status=status,
            body=text.encode(),
            headers={"content-type": "application/json", **(headers or {})},
        )

    @classmethod
    def json_text(cls, text: str, status: int = 200) -> "HttpResponse":
        """A JSON response from text already serialised (e.g. by SQLite)."""
        return cls.json_bytes(text.encode(), status=status)

    @classmethod
    def json_bytes(cls, *parts: bytes, status: int = 200) -> "HttpResponse":
        """A JSON response from UTF-8 pieces already serialised, joined in one copy."""
        return cls(
            status=status,
            body=b"".join(parts),
            headers={"content-type": "application/json"},
        )

    @classmethod
    def error(
        cls,
        status: int,
        error: str,
        detail: str | None = None,
        headers: dict[str, str] | None = None,
        fields: list[FieldError] | None = None,
    ) -> "HttpResponse":
        """A JSON error body with a stable error code and a human detail (and, for a body
        refused, what is wrong field by field: `fields`, left out when there is none)."""
        body = ErrorBody(error=error, detail=detail, fields=fields or None)
        payload = body.model_dump(mode="json", exclude=None if fields else {"fields"})
        return cls.json(payload, status=status, headers=headers)


class BadRequest(Exception):
    """Input the client must fix; becomes a 4xx with a clear message."""

    def __init__(
        self,
        detail: str,
        *,
        status: int = 400,
        error: str = "bad_request",
        field: str | None = None,
        fields: list[FieldError] | None = None,
    ) -> None:
        """`field`: the one body field at fault; `fields`: several, each with its message."""
        super().__init__(detail)
        self.detail = detail
        self.status = status
        self.error = error
        if fields is None and field is not None:
            fields = [FieldError(field=field, message=detail)]
        self.fields = fields


M = TypeVar("M", bound=BaseModel)


def parse_body(request: HttpRequest, model: type[M], max_bytes: int) -> M:
    """Validate a JSON body into a model, or raise BadRequest saying what is wrong."""
    if len(request.body) > max_bytes:
        raise BadRequest(f"body larger than {max_bytes} bytes", status=413, error="too_large")
    try:
        request.body.decode("utf-8")
    except UnicodeDecodeError:
        raise BadRequest("the body is not valid UTF-8", error="invalid_encoding") from None
    try:
        return model.model_validate_json(request.body or b"{}")
    except ValidationError as exc:
        fields = [FieldError(field=f, message=m) for f, m in validation_fields(exc)]
        raise BadRequest(
            validation_message(exc), status=422, error="invalid_body", fields=fields
        ) from exc


def int_param(request: HttpRequest, name: str, default: int, *, low: int, high: int) -> int:
    """An integer query parameter within [low, high]."""
    raw = request.query.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise BadRequest(f"{name} must be an integer") from exc
    if not low <= value <= high:
        raise BadRequest(f"{name} must be between {low} and {high}")
    return value
