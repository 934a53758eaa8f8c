"""Caches derived from the file system, not from the log.

Compressed views of files (content-addressed by sha256 and mode), file contents by hash (for
``diff`` reads) and the code-search index live here, in tables of the same database. They are
not projections: replay does not rebuild them and deleting them loses nothing (they are
recomputed from the files on the next read). Secrets are redacted before anything is cached.
"""
