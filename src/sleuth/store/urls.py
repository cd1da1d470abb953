"""Connection strings (the PostgreSQL catalog's URL, a Milvus URI) fit for messages: every
password they may hold replaced by ``***``. Pure functions."""

from __future__ import annotations

import re

#: ``scheme://user:password@host``: the password runs to the last ``@`` before the path, query or
#: fragment (a password with a raw ``@`` too).
_USERINFO = re.compile(r"(://[^:/@?#\s]*):[^/?#\s]*@")
#: libpq's ``password`` / ``sslpassword`` as a URI query parameter (``?password=...``) or a
#: key/value pair (``host=h password=...``, quoted or not).
_PASSWORD_PARAM = re.compile(r"((?:^|[?&\s])(?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'?|[^&\s]*)", re.IGNORECASE)


def redact_url(url: str) -> str:
    """``url`` (or any text quoting it, such as a driver's error message) without its passwords."""
    return _PASSWORD_PARAM.sub(r"\1***", _USERINFO.sub(r"\1:***@", url))
