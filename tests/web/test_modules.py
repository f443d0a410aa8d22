"""The chat's pure modules (the conversation model, storage, host messages) run under node,
without a browser. The markdown renderer needs a DOM: tests/web/test_markdown_browser.py."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

WEB_JS = Path(__file__).resolve().parents[2] / "web" / "js"

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


def run_module(tmp_path: Path, module: str, body: str) -> Any:
    """Run `body` (which must print JSON) with `module`'s exports imported as `m`."""
    # .mjs copies: node then reads them as ES modules whatever package.json says.
    for source in WEB_JS.glob("*.js"):
        (tmp_path / (source.stem + ".mjs")).write_text(
            source.read_text().replace('.js";', '.mjs";')
        )
    target = (tmp_path / f"{module}.mjs").as_uri()
    script = f"import * as m from {json.dumps(target)};\n{body}\n"
    out = subprocess.run(
        ["node", "--input-type=module", "-e", script],
        capture_output=True,
        text=True,
        timeout=20,
        check=True,
    )
    return json.loads(out.stdout)


def test_conversation_never_shows_anything_twice(tmp_path: Path) -> None:
    messages = [
        {"id": "m1", "turn_id": "m1", "role": "user", "content": "hi", "tool_calls": []},
        {
            "id": "m1:r:a1",
            "turn_id": "m1",
            "role": "assistant",
            "content": "Looking.",
            "tool_calls": [{"id": "c1", "name": "analyze_token", "arguments": '{"symbol":"PEPE"}'}],
            "finish_reason": "tool_calls",
        },
        {
            "id": "m1:r:t1:c1",
            "turn_id": "m1",
            "role": "tool",
            "content": "ok",
            "tool_call_id": "c1",
            "name": "analyze_token",
            "status": "complete",
            "meta": {"duration_ms": 12.5, "truncated": False},
        },
        {
            "id": "m1:r:a2",
            "turn_id": "m1",
            "role": "assistant",
            "content": "Done.",
            "tool_calls": [],
            "finish_reason": "stop",
        },
    ]
    frames = [
        {"type": "ack", "thread_id": "t", "message_id": "m2"},
        {"type": "start", "thread_id": "t", "turn_id": "m2", "model": "x"},
        {"type": "text_delta", "thread_id": "t", "turn_id": "m2", "step": 1, "delta": "A"},
        {"type": "tool_call", "thread_id": "t", "turn_id": "m2", "step": 1, "call_id": "c2",
         "name": "n", "arguments": {}},
        {"type": "tool_result", "thread_id": "t", "turn_id": "m2", "step": 1, "call_id": "c2",
         "name": "n", "ok": False, "duration_ms": 3, "truncated": True, "content": "err"},
        {"type": "text_delta", "thread_id": "t", "turn_id": "m2", "step": 2, "delta": "B"},
        {"type": "done", "thread_id": "t", "turn_id": "m2", "finish_reason": "stop", "steps": 2,
         "usage": {"prompt_tokens": 1, "completion_tokens": 1}},
    ]  # fmt: skip
    summary = run_module(
        tmp_path,
        "conversation",
        f"""
        const conv = m.Conversation.fromMessages("t", {json.dumps(messages)});
        conv.addPending("m2", "again");
        const frames = {json.dumps(frames)};
        // The same frames twice (a tab that saw them live and again), and messages again.
        for (const f of frames) conv.applyFrame(f);
        for (const f of frames.filter((f) => f.type.startsWith("tool"))) conv.applyFrame(f);
        for (const msg of {json.dumps(messages)}) {{
          if (msg.role !== "assistant") conv.applyMessage(msg);
        }}
        console.log(JSON.stringify([...conv.turns.values()].map((t) => ({{
          id: t.id, state: t.state, user: t.user && t.user.text,
          parts: t.parts.map((p) => p.type === "tool"
            ? `tool:${{p.callId}}:${{p.status}}:${{p.durationMs}}` : `text:${{p.text}}`),
        }}))));
        """,
    )
    assert summary == [
        {
            "id": "m1",
            "state": "done",
            "user": "hi",
            "parts": ["text:Looking.", "tool:c1:ok:12.5", "text:Done."],
        },
        {
            "id": "m2",
            "state": "done",
            "user": "again",
            "parts": ["text:A", "tool:c2:error:3", "text:B"],
        },
    ]


def test_a_turn_cut_off_by_a_restart_ends_with_its_text_and_a_retry(tmp_path: Path) -> None:
    stored = [
        {"id": "m1", "turn_id": "m1", "role": "user", "content": "hi", "tool_calls": []},
        {"id": "m1:r:a1", "turn_id": "m1", "role": "assistant", "content": "Half an",
         "tool_calls": [], "status": "incomplete", "finish_reason": "error",
         "meta": {"ended_by": "restart", "step": 1}},
    ]  # fmt: skip
    frames = [
        {"type": "start", "seq": 1, "thread_id": "t", "turn_id": "m2", "model": "x"},
        {"type": "text_delta", "seq": 2, "thread_id": "t", "turn_id": "m2", "step": 1,
         "delta": "Streaming"},
        {"type": "turn_interrupted", "thread_id": "t", "turn_id": "m2", "reason": "restart",
         "message": "cut off by a restart", "retryable": True},
    ]  # fmt: skip
    turns = run_module(
        tmp_path,
        "conversation",
        f"""
        const conv = m.Conversation.fromMessages("t", {json.dumps(stored)});
        for (const f of {json.dumps(frames)}) conv.applyFrame(f);
        console.log(JSON.stringify([...conv.turns.values()].map((t) => ({{
          id: t.id, state: t.state, error: t.error,
          text: t.parts.map((p) => p.text).join(""),
        }}))));
        """,
    )
    assert turns[0]["state"] == "error" and turns[0]["text"] == "Half an"
    assert turns[0]["error"]["code"] == "interrupted" and turns[0]["error"]["retryable"]
    assert "restart" in turns[0]["error"]["message"]
    # Live: the frame ends the running turn, keeping what streamed, with a retry.
    assert turns[1]["state"] == "error" and turns[1]["text"] == "Streaming"
    assert turns[1]["error"] == {
        "code": "interrupted",
        "message": "cut off by a restart",
        "retryable": True,
    }


def test_an_answer_storage_did_not_keep_ends_with_its_error_and_a_retry(tmp_path: Path) -> None:
    stored = [
        {"id": "m1", "turn_id": "m1", "role": "user", "content": "hi", "tool_calls": []},
        {"id": "m1:r:a1", "turn_id": "m1", "role": "assistant", "content": "Half an",
         "tool_calls": [], "status": "incomplete", "finish_reason": "error",
         "meta": {"ended_by": "storage", "step": 1}},
    ]  # fmt: skip
    # Live: the error frame alone ends the turn (no done follows an end not stored).
    frames = [
        {"type": "start", "seq": 1, "thread_id": "t", "turn_id": "m2", "model": "x"},
        {"type": "text_delta", "seq": 2, "thread_id": "t", "turn_id": "m2", "step": 1,
         "delta": "Streaming"},
        {"type": "error", "seq": 3, "thread_id": "t", "turn_id": "m2",
         "code": "storage_unavailable", "message": "could not be saved", "retryable": True},
    ]  # fmt: skip
    turns, busy = run_module(
        tmp_path,
        "conversation",
        f"""
        const conv = m.Conversation.fromMessages("t", {json.dumps(stored)});
        for (const f of {json.dumps(frames)}) conv.applyFrame(f);
        console.log(JSON.stringify([[...conv.turns.values()].map((t) => ({{
          state: t.state, error: t.error, text: t.parts.map((p) => p.text).join(""),
        }})), conv.busy]));
        """,
    )
    assert turns[0]["state"] == "error" and turns[0]["text"] == "Half an"
    assert turns[0]["error"]["code"] == "storage_unavailable" and turns[0]["error"]["retryable"]
    assert "could not be saved" in turns[0]["error"]["message"]
    assert turns[1]["state"] == "error" and turns[1]["text"] == "Streaming"
    assert turns[1]["error"] == {
        "code": "storage_unavailable",
        "message": "could not be saved",
        "retryable": True,
    }
    assert busy is False


def test_host_messages_are_taken_only_in_their_known_shapes(tmp_path: Path) -> None:
    jwt = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1In0.c2ln"
    cases = [
        {"type": "albert:session", "token": jwt},
        {"type": "albert:sign-out"},
        {"type": "albert:session", "token": jwt, "extra": 1},
        {"type": "albert:sign-out", "token": jwt},
        {"type": "albert:session", "token": 7},
        {"type": "albert:session", "token": "not a jwt"},
        {"type": "albert:session", "token": jwt + "=="},
        {"type": "albert:session", "token": "a" * 8200 + ".b.c"},  # longer than any JWT
        {"type": "albert:ready"},
        {"token": jwt},
        [{"type": "albert:sign-out"}],
        "albert:sign-out",
        None,
    ]
    read = run_module(
        tmp_path,
        "embed",
        f"console.log(JSON.stringify({json.dumps(cases)}.map(m.readHostMessage)));",
    )
    assert read[:2] == cases[:2]
    assert read[2:] == [None] * (len(cases) - 2)
    # Objects of another prototype (a class instance, a Map) are not plain messages.
    odd = run_module(
        tmp_path,
        "embed",
        "class M { constructor() { this.type = 'albert:session'; "
        f"this.token = {json.dumps(jwt)}; }} }}\n"
        "console.log(JSON.stringify([m.readHostMessage(new M()), m.readHostMessage(new Map())]));",
    )
    assert odd == [None, None]


def test_storage_that_refuses_every_access_falls_back_to_memory(tmp_path: Path) -> None:
    body = """
    Object.defineProperty(globalThis, "localStorage", {
      get() { throw new Error("SecurityError: access denied for this document"); },
    });
    m.store.set("albert.session", "{}");
    const kept = m.store.get("albert.session");
    m.store.remove("albert.session");
    console.log(JSON.stringify([kept, m.store.get("albert.session"), m.store.get("other")]));
    """
    assert run_module(tmp_path, "storage", body) == ["{}", None, None]


def test_a_confirmation_is_asked_settled_replayed_and_read_back(tmp_path: Path) -> None:
    ids = {"thread_id": "t", "turn_id": "m1"}
    frames = [
        {"type": "start", "seq": 1, **ids, "model": "x"},
        {"type": "tool_call", "seq": 2, **ids, "step": 1, "call_id": "c1",
         "name": "delete_file", "arguments": {"path": "/x"}},
        {"type": "confirm_tool", "seq": 3, **ids, "step": 1, "call_id": "c1",
         "server": "files", "tool": "delete_file", "arguments": "{\n  \"path\": \"/x\"\n}",
         "arguments_cut": False, "timeout_seconds": 120},
    ]  # fmt: skip
    decided = {"type": "tool_decision", "seq": 4, **ids, "step": 1, "call_id": "c1",
               "decision": "declined"}  # fmt: skip
    stored = [
        {"id": "m1", "turn_id": "m1", "role": "user", "content": "rm", "tool_calls": []},
        {"id": "m1:r:t1:c1", "turn_id": "m1", "role": "tool", "content": "The user declined",
         "tool_call_id": "c1", "name": "delete_file", "status": "error",
         "meta": {"source": "files", "confirmation": "declined", "arguments": {"path": "/x"}}},
    ]  # fmt: skip
    seen = run_module(
        tmp_path,
        "conversation",
        f"""
        const conv = new m.Conversation("t");
        const tool = (c) => c.turn("m1").parts.find((p) => p.type === "tool");
        const confirmOf = () => ({{...tool(conv).confirm}});
        const frames = {json.dumps(frames)};
        for (const f of frames) conv.applyFrame(f);
        const asked = confirmOf();
        conv.applyFrame({json.dumps(decided)});
        const settled = confirmOf();
        // A resume replays every frame from the start: the same question, still settled.
        for (const f of [...frames, {json.dumps(decided)}]) conv.applyFrame(f);
        const replayed = confirmOf();
        const reloaded = m.Conversation.fromMessages("t", {json.dumps(stored)});
        const read = tool(reloaded).confirm;
        console.log(JSON.stringify({{asked, settled, replayed, read,
          parts: conv.turn("m1").parts.length}}));
        """,
    )
    assert seen["asked"]["server"] == "files" and seen["asked"]["decision"] is None
    assert seen["asked"]["timeoutSeconds"] == 120 and '"/x"' in seen["asked"]["arguments"]
    assert seen["settled"]["decision"] == "declined"
    assert seen["replayed"]["decision"] == "declined" and seen["parts"] == 1
    assert seen["read"] == {"server": "files", "decision": "declined"}


def test_card_figures_links_and_explorers(tmp_path: Path) -> None:
    out = run_module(
        tmp_path,
        "format",
        """console.log(JSON.stringify({
  usd: [m.usd(1.25e6), m.usd(87270.4), m.usd(12.5), m.usd(0.00000799), m.usd("5"), m.usd(null)],
  cents: m.usdExact(66291.71),
  price: [m.price(0.000007990), m.price(0.99507), m.price(59482), m.price(6.39)],
  pct: [m.pct(4.9021), m.pct(-0.44, {signed: true}), m.pct(3.54, {signed: true})],
  amount: [m.amount(12500.5), m.amount(2.718281828), m.amount(420.69e12)],
  risk: [m.riskWords("very_high"), m.riskWords(null), m.riskWords("medium")],
  sort: [m.sortWords("apy:desc,tvl_usd:desc"), m.sortWords("tvl_usd:asc"),
         m.sortWords("_text_match:desc,rank:asc"), m.sortWords("price_change_24h:desc,rank:asc")],
  short: m.shortAddress("0x257BC0C6921b4ae476E65A28744ee181cd81c533"),
  explorer: [
    m.explorerUrl("base", "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"),
    m.explorerUrl("narnia", "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"),
    m.explorerUrl("ethereum", "0xEeeeeEeeeEeEeeEeEeEeeEEEeeeeEeeeeeeeEEeE"),
    m.explorerUrl("solana", "Ao3fKu6s2jH2vFHLWUchgf4mPWQ7G4FEttHa1xXv7Wio"),
    m.explorerUrl("ethereum", "0x12"),
  ],
  urls: [
    m.safeUrl("https://aerodrome.finance/deposit?token0=0x42&factory=undefined"),
    m.safeUrl("javascript:alert(1)"),
    m.safeUrl("https://defillama.com/yields/pool/abc"),
    m.safeUrl("https://x.test/undefined/page"),
    m.safeUrl(42),
  ],
  chain: [m.chainName("bsc"), m.chainName("robinhood-chain")],
}))""",
    )
    assert out["usd"] == ["$1.25M", "$87,270", "$12.50", "$0.00000799", "unknown", "unknown"]
    assert out["cents"] == "$66,291.71"
    assert out["price"] == ["$0.000007990", "$0.9951", "$59,482.00", "$6.390"]
    assert out["pct"] == ["4.90%", "−0.44%", "+3.54%"]
    assert out["amount"] == ["12,500.5", "2.718282", "420.69T"]
    assert out["risk"] == ["Very high risk", "Unrated", "Medium risk"]
    assert out["sort"] == [
        "highest APY first",
        "lowest TVL first",
        "closest match first",
        "highest 24-hour price change first",
    ]
    assert out["short"] == "0x257B…c533"
    assert out["explorer"] == [
        "https://basescan.org/address/0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
        None,
        None,
        "https://solscan.io/account/Ao3fKu6s2jH2vFHLWUchgf4mPWQ7G4FEttHa1xXv7Wio",
        None,
    ]
    assert out["urls"] == [None, None, "https://defillama.com/yields/pool/abc", None, None]
    assert out["chain"] == ["BNB Chain", "Robinhood chain"]


def test_the_cards_agree_with_the_planner_and_the_guidelines() -> None:
    """The tools the chat draws as cards are the ones the demo planner leaves to a card, and
    the folded guidelines state the data server's own APY bands."""
    from data_server.coaching import BAND_LABELS
    from demo_planner.leads import CARD_KINDS

    source = (WEB_JS / "cards.js").read_text()
    start = source.index("const KINDS = {")
    table = source[start : source.index("};", start)]
    kinds = dict(re.findall(r"(\w+): \"(\w+)\"", table))
    assert kinds == CARD_KINDS
    guidelines = source[source.index("const GUIDELINES = [") :].lower()
    for label in BAND_LABELS.values():
        assert label.split(" — ")[0].lower() in guidelines, label
