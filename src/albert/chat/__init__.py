"""The chat object's behaviour: thread HTTP API, socket frames, turns."""
