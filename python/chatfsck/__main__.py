"""The ``chatfsck`` command, as ``cargo install chatfsck`` gives it.

The wheel's console script (``[project.scripts]``) and ``python -m
chatfsck`` both run the engine's own entry point in the extension module:
one build of the engine serves the library and the command.
"""

import sys

from chatfsck._native import main as _main


def main():
    sys.stdout.flush()
    sys.exit(_main(["chatfsck", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
