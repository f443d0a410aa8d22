"""The published protocol schema is generated from the models and kept fresh."""

import json
from pathlib import Path

import jsonschema

from albert.protocol.schema import protocol_schema

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_schema_is_current() -> None:
    committed = json.loads((ROOT / "docs" / "protocol.schema.json").read_text())
    assert committed == json.loads(json.dumps(protocol_schema())), (
        "run: uv run python scripts/gen_protocol_schema.py"
    )


def test_real_frames_validate_against_it() -> None:
    schema = protocol_schema()
    jsonschema.Draft202012Validator.check_schema(schema)

    def validator(name: str) -> jsonschema.Draft202012Validator:
        return jsonschema.Draft202012Validator({**schema, "$ref": f"#/$defs/{name}"})

    chat = {"type": "chat", "thread_id": "t_1", "message_id": "m_1", "text": "hi"}
    assert validator("ClientFrame").is_valid(chat)
    assert not validator("ClientFrame").is_valid({**chat, "thread_id": "../x"})
    done = {
        "type": "done",
        "seq": 4,
        "thread_id": "t",
        "turn_id": "m",
        "finish_reason": "step_limit",
        "steps": 5,
        "usage": {"prompt_tokens": 1, "completion_tokens": 2},
    }
    assert validator("ServerFrame").is_valid(done)
    assert not validator("ServerFrame").is_valid({**done, "finish_reason": "exploded"})


def test_the_confirmation_round_trip_validates_against_it() -> None:
    schema = protocol_schema()

    def valid(name: str, frame: dict[str, object]) -> bool:
        validator = jsonschema.Draft202012Validator({**schema, "$ref": f"#/$defs/{name}"})
        return validator.is_valid(frame)

    asked = {
        "type": "confirm_tool",
        "seq": 3,
        "thread_id": "t",
        "turn_id": "m",
        "step": 1,
        "call_id": "call_1",
        "server": "files",
        "tool": "delete_file",
        "arguments": '{\n  "path": "/x"\n}',
        "arguments_cut": False,
        "timeout_seconds": 120,
    }
    assert valid("ServerFrame", asked)
    assert not valid("ServerFrame", {k: v for k, v in asked.items() if k != "server"})
    decided = {
        "type": "tool_decision",
        "seq": 4,
        "thread_id": "t",
        "turn_id": "m",
        "step": 1,
        "call_id": "call_1",
        "decision": "declined",
    }
    assert valid("ServerFrame", decided)
    assert not valid("ServerFrame", {**decided, "decision": "maybe"})
    answer = {"type": "confirm", "thread_id": "t_1", "turn_id": "m_1", "call_id": "c"}
    assert valid("ClientFrame", {**answer, "approved": True})
    assert not valid("ClientFrame", answer)
    assert not valid("ClientFrame", {**answer, "approved": True, "turn_id": "../m"})
    refused = {"type": "error", "code": "nothing_to_confirm", "message": "nothing to confirm"}
    assert valid("ServerFrame", refused)
