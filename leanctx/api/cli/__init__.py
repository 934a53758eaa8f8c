"""The ``lean-ctx`` console script."""


def main() -> None:
    from .app import main as run

    run()


__all__ = ["main"]
