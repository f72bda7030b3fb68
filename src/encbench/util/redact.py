"""Keeping secrets out of result files, reports and logs (stored as <hidden>).

Two forms of password are hidden, in one left-to-right pass each (linear time, whatever
the input: no pattern here can backtrack over more than one token):

- URI userinfo, `scheme://user:SECRET@host`: everything from the first ':' after the
  user name to the last '@' of the same whitespace-free token (or, when that token has
  none, the last '@' before the next URI or line break: a password may hold spaces);
- key=value, `password=SECRET`, `password = 'SE CRET'` (libpq quoting: backslash escapes
  `\\'` and `\\\\`, double quotes alike; an unterminated quote runs to the end), also
  `sslpassword`, `passwd`, `pwd`, `PGPASSWORD`, `MYSQL_PWD` (any name ending so); in a
  URI query (`?password=` / `&password=`) the value ends at '&' or '#'.

Command lines are redacted one argument at a time, before they are shell-quoted
(`command_line`): quoting first would turn `password='a b'` into something this
cannot recognise.
"""

from __future__ import annotations

import re
import shlex

HIDDEN = "<hidden>"

# a scheme starts after a character that cannot be part of one: each start is tried once
_SCHEME = re.compile(r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]*://")
_USER = re.compile(r"[^\s/?#@:]*:")
_KEY = re.compile(r"(?:password|passwd|pwd)\s*=[ \t]*", re.IGNORECASE)  # also sslpassword, PGPASSWORD...
_QUOTED = {q: re.compile(rf"{q}(?:[^{q}\\]|\\.)*(?:{q}|\\?\Z)", re.DOTALL) for q in "'\""}
_UNQUOTED = re.compile(r"\S*")
_IN_QUERY = re.compile(r"[^\s&#]*")
_SPACE = re.compile(r"\s")


def redact(text: str) -> str:
    """Hide passwords in connection strings (URIs and key=value) and command lines."""
    return _redact_pairs(_redact_uris(text))


def command_line(argv: list[str], program: str = "encbench") -> str:
    """argv as one shell line, each argument redacted before it is quoted."""
    return " ".join([program, *(shlex.quote(redact(a)) for a in argv)])


def stored_command(text: str) -> str:
    """A command line as a result file stores it, redacted again argument by argument.

    Files written before arguments were redacted ahead of quoting may hold a quoted
    key=value password: split the line back into arguments (shell rules) and redact each.
    A line that does not split is redacted whole.
    """
    try:
        argv = shlex.split(text)
    except ValueError:
        return redact(text)
    if not argv:
        return text
    return command_line(argv[1:], argv[0])


def _redact_uris(text: str) -> str:
    starts = [m.end() for m in _SCHEME.finditer(text)]
    if not starts:
        return text
    out, done = [], 0
    for i, start in enumerate(starts):
        if start < done:
            continue
        user = _USER.match(text, start)
        if not user:
            continue
        colon = user.end()  # the secret starts here
        limit = starts[i + 1] if i + 1 < len(starts) else len(text)
        newline = text.find("\n", colon, limit)
        limit = newline if newline >= 0 else limit
        space = _SPACE.search(text, colon, limit)
        token_end = space.start() if space else limit
        at = text.rfind("@", colon, token_end)
        if at < 0:
            at = text.rfind("@", colon, limit)
        if at < 0:
            continue
        out += [text[done:colon], HIDDEN]
        done = at
    out.append(text[done:])
    return "".join(out)


def _redact_pairs(text: str) -> str:
    out, done = [], 0
    for m in _KEY.finditer(text):
        if m.start() < done:
            continue
        pos = m.end()
        in_query = m.start() > 0 and text[m.start() - 1] in "?&"
        quote = _QUOTED.get(text[pos:pos + 1])
        value = (quote or (_IN_QUERY if in_query else _UNQUOTED)).match(text, pos)
        out += [text[done:pos], HIDDEN]
        done = value.end()
    out.append(text[done:])
    return "".join(out)
