"""Local stand-in for the parts of `pyodide` the project's adapters use."""
