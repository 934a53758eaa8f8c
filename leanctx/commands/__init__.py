"""Commands: the only writers of the log. Importing this package registers every handler."""

from . import agents  # noqa: F401  (handler registration)
from .bus import HANDLERS, Command, CommandBus, CommandContext, DispatchResult, commands_by_name, handles

__all__ = ["HANDLERS", "Command", "CommandBus", "CommandContext", "DispatchResult", "commands_by_name", "handles"]
