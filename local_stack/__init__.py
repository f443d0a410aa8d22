"""The `albert` command and the local stack it runs.

- `cli.py`: `albert serve` (the worker alone, on the local runtime or on workerd) and
  `albert dev` (the whole stack); `python -m local_stack` is the same command;
- `stack.py`: `albert dev`: Typesense, the demo data, the local chains, the data server and
  the worker, all on 127.0.0.1;
- `local_process.py`: either command as a child process on free ports, for tests, the
  evaluation and the benchmarks.

The worker's runtime is miniflare/ (or workerd_dev/ for workerd); every child process is
started through child_processes/.
"""
