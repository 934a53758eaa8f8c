"""Rebuild every projection from the log, verify the chain, compare digests."""

from .replay import ProjectionReport, ReplayReport, replay

__all__ = ["ProjectionReport", "ReplayReport", "replay"]
