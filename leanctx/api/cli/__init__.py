"""The ``lean-ctx`` console script.

It first offers the call to a running daemon through the thin client (standard library only:
an interpreter start and one Unix-socket round trip); when no daemon runs, or the verb is not a
short one, it runs the CLI in-process.
"""


def main() -> None:
    import os
    import sys

    from ..thin import forward

    try:
        code = forward(sys.argv[1:])
    except KeyboardInterrupt:
        code = 130
    if code is not None:
        # the output was written with os.write and nothing else ran: skip the interpreter's
        # finalization (a few ms of a forwarded call's cost)
        os._exit(code)
    from .app import main as run

    run()


__all__ = ["main"]
