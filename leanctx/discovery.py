"""Import every module of a package (so that command families, event kinds, projections
and CLI verbs register themselves by being defined — adding a family touches no list)."""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def import_submodules(package: str, *, suffix: str = "") -> list[ModuleType]:
    pkg = importlib.import_module(package)
    out = []
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        if info.name.startswith("_") or not info.name.endswith(suffix):
            continue
        out.append(importlib.import_module(f"{package}.{info.name}"))
    return out
