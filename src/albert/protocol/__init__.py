"""Wire shapes: WebSocket frames and HTTP bodies, all pydantic."""
