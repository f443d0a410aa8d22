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
