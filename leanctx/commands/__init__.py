"""Commands: the only writers of the log. Importing this package imports every module in it,
which registers its handlers (one module per command family)."""

from ..discovery import import_submodules
from .bus import HANDLERS, Command, CommandBus, CommandContext, DispatchResult, commands_by_name, handles

import_submodules(__name__)

__all__ = ["HANDLERS", "Command", "CommandBus", "CommandContext", "DispatchResult", "commands_by_name", "handles"]
