"""Phrases after ``name:`` that are no value (used by ``secret_code`` and ``secret_assign``).

``described(phrase, name)``: what follows a secret name and a ``:`` reads as text about the
field, not as its value —

- a **sentence** (``prose``): a plain word of 3+ letters and 3+ more words, one of them a small
  word of prose (``the``, ``to``, ``for``, ``on``...): ``pre_shared_key: limit 0-RTT to resumption
  connections``; or an English word of two letters and two small words (``do not send extension
  when no identities are present``). ``password: correct horse battery staple`` holds none, and
  ``to be or not`` holds one: passphrases.
- a **status** of a changelog or NEWS listing: one of ``Added``, ``Removed``, ``Deprecated``,
  ``Changed``, ``Renamed``, ``Updated``, ``Fixed``, ``Deleted``, ``Dropped``, ``Obsoleted``
  (lowercase, capitalized or capitals), alone, before punctuation or before a small word:
  ``gnutls_session_get_master_secret: Added``, ``GNUTLS_RND_KEY: ADDED, gnutls_rnd_level_t
  member``, ``GNUTLS_BAG_SECRET: ADDED to gnutls/pkcs12.h.`` (gnutls's NEWS); ``password:
  Added2024!`` and ``password: Added hunter2x`` are values.
- a **description** naming the field's own noun: 3+ plain words (letters, no digit nor symbol),
  one of them the name's last word when that is ``secret``, ``password``, ``passwd``,
  ``passphrase`` or ``token`` (``_tls13_derive_secret: define secret argument``,
  ``..._set_challenge_password: don't accept null password``, gnutls's commit subjects);
  ``api_secret: define stable argument`` and ``db_password: my password is hunter2`` are values.

Each reads the phrase's first 40 words at most.
"""

from __future__ import annotations

import re

# a sentence, not a value: a plain word of 3+ letters, then 3+ more of which one is a small word of prose
# (``limit 0-RTT to resumption connections``, ``pass on the underlying error code``)
_FIRST_WORD = re.compile(r"[A-Za-z][a-z]{2,}(?:-[a-z]+)*[ \t]")  # not a prefix (``sk with spaces tapir``)
_SMALL_WORDS = frozenset({
    "a", "an", "the", "to", "for", "of", "on", "in", "into", "with", "without", "from", "by", "at", "as", "is",
    "are", "was", "be", "been", "when", "if", "around", "after", "before", "than", "that", "this", "its",
    "instead", "via",
})
# a sentence may open with an English word of two letters when two small words follow (``do not
# send extension when no identities are present``); ``sk``, ``pk``, ``ab`` stay a value's first word
_SHORT_FIRST = frozenset({"do", "no", "be", "is", "it", "we", "if", "so", "in", "on", "to", "as", "at", "by", "of",
                          "an", "up", "go"})
# a changelog's status of a symbol: the whole first word (less a sentence's punctuation)
_STATUS = re.compile(r"[a-z]+|[A-Z][a-z]+|[A-Z]+")  # lowercase, capitalized or capitals (not ``aDDed``)
_STATUS_WORDS = frozenset({"added", "removed", "deprecated", "changed", "renamed", "updated", "fixed", "deleted",
                           "dropped", "obsoleted"})
_NOUNS = frozenset({"secret", "password", "passwd", "passphrase", "token"})  # a field's own noun
_NAME_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")  # ``challengePassword``: challenge, Password
_WORD = re.compile(r"[A-Za-z]+")
_PLAIN = re.compile(r"[A-Za-z]+(?:['-][A-Za-z]+)*[,.;:]?")  # a plain word (``don't``), no digit nor symbol


def prose(phrase: str) -> bool:
    """Whether ``phrase`` reads as a sentence, not a value: a plain word first, then 3+ more of
    which one is a small word of prose (``use HMAC-SHA256 for PBKDF2``; ``correct horse battery
    staple`` holds none: a passphrase), or two when the first is an English word of two letters
    (``do not send it when the server...``; ``to be or not`` holds one)."""
    words = phrase.split(None, 40)
    if len(words) < 4:
        return False
    small = sum(w in _SMALL_WORDS for w in words[1:40])
    if _FIRST_WORD.match(phrase):
        return small >= 1
    return small >= 2 and phrase[2:3] in (" ", "\t") and words[0].lower() in _SHORT_FIRST


def status(phrase: str) -> bool:
    """Whether ``phrase`` is a changelog status: a status word alone, before punctuation or
    before a small word (``Added``, ``REMOVED,``, ``ADDED to x.h``; not ``Added hunter2x``)."""
    words = phrase.split(None, 2)
    if not words:
        return False
    first = words[0].rstrip(",.;:")
    if first.lower() not in _STATUS_WORDS or not _STATUS.fullmatch(first):
        return False
    return len(words) == 1 or first != words[0] or words[1].lower() in _SMALL_WORDS


def names_own_noun(phrase: str, name: str) -> bool:
    """Whether ``phrase`` (3+ words) holds the last word of ``name`` when that is a secret's noun:
    a description of the field (``define secret argument`` after ``_tls13_derive_secret``)."""
    own = _NAME_WORDS.findall(name)
    if not own or own[-1].lower() not in _NOUNS:
        return False
    words = phrase.split(None, 40)
    noun = own[-1].lower()
    return (3 <= len(words) <= 40 and all(_PLAIN.fullmatch(w) for w in words)
            and any(w.lower() == noun for word in words for w in _WORD.findall(word)))


def described(phrase: str, name: str = "") -> bool:
    """Whether ``phrase``, after ``name:``, is a sentence, a status or a description of the field
    (see the module doc), not a value."""
    return prose(phrase) or status(phrase) or (bool(name) and names_own_noun(phrase, name))
