"""`python -m local_stack`: the `albert` command."""

from local_stack.cli import main

if __name__ == "__main__":
    main()
