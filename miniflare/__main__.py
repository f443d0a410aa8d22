"""`python -m miniflare`: the local runtime alone (the worker, no data server)."""

from miniflare.cli import main

if __name__ == "__main__":
    main(["serve", *__import__("sys").argv[1:]])
