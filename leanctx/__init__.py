"""lean-ctx: a context layer for AI coding agents.

Token economy (compressed reads, shell output, stubs) and multi-agent coordination
(registry, bus, tasks, locks, scent) over one event-sourced SQLite log.
"""

__version__ = "0.1.0"
