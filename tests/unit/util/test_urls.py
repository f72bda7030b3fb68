"""util/urls: the one reader of a server URL a user names (--dsn, a tls-scan target): every input refused in one
line (BadValueError, exit 4), never a bare ValueError, and port 0 never read as "the default port"."""

from __future__ import annotations

import pytest

from encbench.errors import BadValueError
from encbench.util import urls


def test_a_url_split_into_its_parts():
    u = urls.split("MySQL://bob:s%40cret@[::1]:3307/app?x=1", what="--dsn")
    assert (u.scheme, u.hostname, u.port, u.username, u.password, u.query) == ("mysql", "::1", 3307, "bob", "s%40cret",
                                                                               "x=1")
    assert urls.split("postgresql://db1", what="target").port is None
    assert urls.split("postgresql://db1:/x", what="target").port is None


@pytest.mark.parametrize("text,words", [
    ("mysql://u:topsecret@[::1", "unclosed '['"),
    ("postgresql://u:topsecret@[::1:5432/db", "unclosed '['"),
    ("mysql://u:topsecret@h:0/db", "port 0 is out of range (1-65535)"),
    ("mysql://u:topsecret@[::1]:0", "port 0 is out of range"),
    ("mysql://u:topsecret@h:65536", "port 65536 is out of range"),
    ("mysql://u:topsecret@h:port", "port that is not a number"),
    ("mysql://u:topsecret@h:-1", "port that is not a number"),
])
def test_unreadable_urls_and_meaningless_ports_are_one_line(text, words):
    with pytest.raises(BadValueError) as e:
        urls.split(text, what="--dsn")
    assert words in e.value.one_line() and "topsecret" not in e.value.one_line()
    assert e.value.exit_code == 4
