"""Command line of loaderlab: ``python -m loaderlab COMMAND [ARGS]``.

Each command is a module with ``main(argv) -> int`` (argv after the command name), imported only
when it runs. Exit status: the command's; 2 for an unknown command.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

# command -> (module holding main(argv), one-line help). Add a command with one line here.
COMMANDS = {
    "doctor": (
        "loaderlab.doctor.cli",
        "probe a DataLoader for the course's pitfalls: doctor my_module:make_loader",
    ),
}


def usage() -> str:
    """The list of commands, one per line."""
    lines = ["usage: python -m loaderlab COMMAND [ARGS]   (COMMAND --help for its options)", "commands:"]
    lines += [f"  {name:<10} {help_}" for name, (_, help_) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``python -m loaderlab`` with ``argv``; return the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(usage())
        return 0 if args else 2
    if args[0] not in COMMANDS:
        print(f"python -m loaderlab: unknown command {args[0]!r}\n{usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[args[0]][0])
    return module.main(args[1:])


if __name__ == "__main__":
    sys.exit(main())
