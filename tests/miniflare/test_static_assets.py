"""Static assets are served before the worker, as Workers static assets are."""

from __future__ import annotations

import httpx

from tests.support.runtime_process import RuntimeProcess


def test_assets_and_api_share_one_origin(tmp_path) -> None:
    with RuntimeProcess(tmp_path, {"ALBERT_MODE": "local"}) as runtime:
        index = httpx.get(f"{runtime.url}/")
        assert index.status_code == 200
        assert index.headers["content-type"].startswith("text/html")
        assert "<title>" in index.text
        assert httpx.get(f"{runtime.url}/../pyproject.toml").status_code == 404
        assert httpx.get(f"{runtime.url}/healthz").json() == {"ok": True}
        session = httpx.post(f"{runtime.url}/api/session")
        assert session.status_code == 201 and session.json()["client_id"].startswith("c_")
