"""The AI service: model clients behind one port, and the tool loop."""
