"""``python -m mangaka COMMAND``: the commands are ``mangaka/cli/``, one module each."""

import sys

from .cli.main import main

if __name__ == "__main__":
    sys.exit(main())
