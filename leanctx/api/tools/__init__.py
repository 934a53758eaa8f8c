"""The rows of the tool registry (``leanctx.api.registry``), one module per tool family.

Every module here is imported on the registry's first use; a module registers its tools with
``@tool(...)``. Nothing else lists them: adding a family is adding a module.
"""
