"""Connection strings (the PostgreSQL catalog's URL, a Milvus URI) fit for messages: every
password they may hold replaced by ``***``. Pure functions."""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

#: ``scheme://user:password@host``: the password runs to the last ``@`` before a space (a password
#: with a raw ``@``, ``/``, ``?`` or ``#`` too, which libpq would read as the host, port or path:
#: a URL with an ``@`` in its query is shown with more hidden than its password). The user runs
#: to its first ``:`` as libpq reads it, a raw ``?``, ``#`` or space in it included.
#: Found a non-space run at a time, the run's last ``@`` by ``rfind``: a regex ``\S*@`` tried
#: again from every ``://`` took quadratic time (17 s for ``"://:"`` * 20,000).
_USERINFO = re.compile(r"://[^:/@\s]*:")
_RUN = re.compile(r"\S+")
#: The same in a text that is one URL: there the password runs to its last ``@``, spaces included.
_URL_USERINFO = re.compile(r"^(\s*[A-Za-z][\w+.-]*://[^:/@]*):.*@", re.DOTALL)
#: libpq's ``password`` / ``sslpassword`` as a URI query parameter (``?password=...``, its name
#: percent-encoded or not: libpq decodes ``?pass%77ord=``) or a key/value pair (``host=h
#: password=...``, quoted or not, a backslash-escaped space in it included).
_PASSWORD_PARAM = re.compile(r"((?:^|[?&\s])([^=?&\s]*)\s*=\s*)('(?:[^'\\]|\\.)*'?|(?:\\.|[^&\s])*)", re.DOTALL)
_PASSWORD_KEYS = ("password", "sslpassword")
#: A quoted fragment of a driver's message (libpq quotes the token it could not read: ``invalid
#: percent-encoded token: "s3cr%et"``; psycopg a host with single quotes), and ``option`` before it.
_QUOTED = re.compile(r"""(option )?(?:"([^"]*)"|(?<!\w)'([^']*)'(?!\w))""")
#: A key/value pair of a libpq connection string (``host=h``, ``dbname='my db'``).
_KEY_VALUE = re.compile(r"(\w+)\s*=\s*('(?:[^'\\]|\\.)*'|\S*)")
#: The parts of a connection string a driver's message may quote as they are.
_SHOWN_KEYS = ("user", "host", "hostaddr", "port", "dbname")


def redact_url(url: str) -> str:
    """``url`` (or any text quoting it, such as a driver's error message) without its passwords."""
    def param(match: re.Match[str]) -> str:
        hidden = unquote(match.group(2)).lower() in _PASSWORD_KEYS
        return match.group(1) + "***" if hidden else match.group(0)

    def run(match: re.Match[str]) -> str:
        text = match.group(0)
        found = _USERINFO.search(text)
        at = text.rfind("@")
        if found is None or at < found.end():  # no "@" after the first "://user:": none after a later one
            return text
        return f"{text[:found.end()]}***{text[at:]}"

    return _PASSWORD_PARAM.sub(param, _RUN.sub(run, _URL_USERINFO.sub(r"\1:***@", url)))


def _shown_parts(url: str) -> set[str]:
    """The user, host, port and database names of ``url`` as it is written, its password redacted
    first (so a password libpq would misread as a host or port is never among them)."""
    redacted = redact_url(url.strip())
    if "://" not in redacted:
        return {v.strip("'") for k, v in _KEY_VALUE.findall(redacted) if k.lower() in _SHOWN_KEYS}
    try:
        parts = urlsplit(redacted)
        names = {parts.hostname, parts.username, str(parts.port) if parts.port else None, parts.path.lstrip("/")}
    except ValueError:  # an unmatched "[", a port that is not a number
        return set()
    return {name for name in names if name}


def redact_driver_message(message: str, url: str) -> str:
    """A driver's ``message`` about connecting to (or reading) ``url``, fit for an error: its
    passwords redacted (:func:`redact_url`) and every quoted fragment (``"x"``, ``'x'``) emptied to
    ``...`` but the URL's user, host, port and database (:func:`_shown_parts`), a connection
    option's name (``for connection option "port"``) and a single punctuation mark: libpq quotes
    the token it could not parse, which may be a piece of a password it misread."""
    shown = _shown_parts(url)

    def fragment(match: re.Match[str]) -> str:
        before, quote = match.group(1) or "", '"' if match.group(2) is not None else "'"
        inner = match.group(2) if match.group(2) is not None else match.group(3)
        keep = inner in shown or (before == "option " and inner.isidentifier()) or re.fullmatch(r"[^\w\s]", inner)
        return f"{before}{quote}{inner if keep else '...'}{quote}"

    return _QUOTED.sub(fragment, redact_url(message))
