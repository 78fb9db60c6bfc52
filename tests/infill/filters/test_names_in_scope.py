"""Rule under test: an answer is cut before the first bare name that nothing in scope defines (the enclosing
function, the code outside functions, builtins, what the answer binds); attributes, prose and the word still
being typed are not judged."""

import dataclasses

import pytest

from diffill.infill.filters.names_in_scope import names_in_scope

METHOD = """import os

from .utils import get_netrc_auth


class Session:
    def request(self, method, url):
        return self.send(method, url)

    def rebuild_auth(self, prepared, response):
        headers = prepared.headers
        <CURSOR>
"""

# (document with cursor, raw answer, expected text)
CASES = [
    # `url` is a parameter of another method, not of this one: cut before it
    (METHOD, "new_auth = get_netrc_auth(url)", "new_auth = get_netrc_auth("),
    # names the method, the module, builtins or the answer itself define are kept
    (METHOD, "headers = dict(prepared.headers)", "headers = dict(prepared.headers)"),
    (METHOD, "path = os.path.join(response.url, 'x')", "path = os.path.join(response.url, 'x')"),
    (METHOD, "for key, value in headers.items():", "for key, value in headers.items():"),
    (METHOD, "total = sum(len(v) for v in headers)", "total = sum(len(v) for v in headers)"),
    (METHOD, "return Session(timeout=3)", "return Session(timeout=3)"),
    (METHOD, "with open(prepared.url) as fh:", "with open(prepared.url) as fh:"),
    (METHOD, "with open(path) as fh:", "with open("),
    # words in strings and comments are prose
    (METHOD, 'raise ValueError("no url here")  # see url', 'raise ValueError("no url here")  # see url'),
    # an attribute is not judged, its owner is
    (METHOD, "response.raw.url", "response.raw.url"),
    (METHOD, "proxies.url", ""),
    # a finished word at the end of the line is judged
    ("def f(a):\n    return a + <CURSOR>\n", "undefined_name", ""),
    # completing the typed word into a name nothing defines: nothing is left
    ("def f(alpha):\n    return al<CURSOR>\n", "phab", ""),
    ("def f(alpha):\n    return al<CURSOR>\n", "pha", "pha"),
    # module level sees the whole module
    ("import sys\n\nfrom_env = 1\n<CURSOR>\n", "print(sys.argv, from_env)", "print(sys.argv, from_env)"),
    ("x = 1\n<CURSOR>\n", "print(y)", "print("),
    # a star import may define anything: not judged
    ("from os.path import *\n\ndef f():\n    return <CURSOR>\n", "joined(a)", "joined(a)"),
    # the line before the cursor binds, quotes and dots too
    ("def f(loop):\n    debug = loop.get_debu<CURSOR>\n", "g()", "g()"),
    ("class A:\n    def _call_connectio<CURSOR>\n", "n_lost(self, exc):", "n_lost(self, exc):"),
    ("from email import encoder<CURSOR>\n", "s", "s"),
    ("from typing import Any,<CURSOR>\n", " BinaryIO", " BinaryIO"),
    ("def f(log):\n    log.warning('socket.send() raised<CURSOR>\n", " exception.')", " exception.')"),
    ("from<CURSOR>\n", " attr.validators import in_", " attr.validators import in_"),
    # a new name alone on its line: what binds it may follow
    ("X = 1\nWRAP<CURSOR>\n", "PED", "PED"),
    ("X = 1\nWRAP<CURSOR>\n", "PED + 1", ""),
    # typing inside a string: prose
    ('def f():\n    return "see <CURSOR>"\n', "the url", "the url"),
]


SELF = """import re


def f(emission):
    if not emission:
        return False
    <CURSOR>
    if matched is None:
        return parts
"""

HANDLERS = """def run(future, func):
    try:
        func()
    except KeyboardInterrupt as ex:
        future.set_exception(ex)
    except BaseException as exc:
        future.set_exception(exc)
    try:
        func()
    except BaseException as ex:
        <CURSOR>
"""

LOCAL_CASES = [
    # an except clause's target is gone once its clause ends: not in scope in another clause...
    (HANDLERS, "future.set_exception(exc)", "future.set_exception("),
    # ...but its own clause's is, and so is one the function binds elsewhere too
    (HANDLERS, "future.set_exception(ex)", "future.set_exception(ex)"),
    (HANDLERS.replace("func()\n    except Base", "exc = None\n    except Base", 1), "print(exc)", "print(exc)"),
    # the blank line below a clause's last statement, indented into it, is in the clause
    (
        "def f():\n    try:\n        g()\n    except OSError as err:\n        log(err)\n        <CURSOR>\n",
        "raise err",
        "raise err",
    ),
    # a comprehension's variable is local to it
    ("def f(items):\n    names = [item.name for item in items]\n    <CURSOR>\n", "return item", "return"),
    ("def f(items):\n    names = [item.name for item in items]\n    <CURSOR>\n", "return names", "return names"),
    ("def f(items):\n    return {k: v for k, v in items}\n\n\ndef g():\n    <CURSOR>\n", "print(k)", "print("),
    # typing inside the comprehension: its variable is in scope
    ("def f(items):\n    return [i<CURSOR> for item in items]\n", "tem.name", "tem.name"),
]

SELF_CASES = [
    # an assignment's value is read before its target is bound: `x = f(x)` needs an `x` from above
    (SELF, "matched = re.search(matched)", "matched = re.search("),
    (SELF, "parts = re.split(parts, emission)", "parts = re.split("),
    (SELF, "emission = float(emission)", "emission = float(emission)"),  # a parameter
    (SELF, "a, matched = matched, 1", "a, matched ="),
    # a name that the value binds itself, or that only a keyword argument names, is as before
    (SELF, "matched = [matched for matched in emission]", "matched = [matched for matched in emission]"),
    (SELF, "register(matched=matched)", "register(matched=matched)"),  # `matched` is this function's
    (SELF, "n = 1; matched = n", "n = 1; matched = n"),  # a statement after `;` is not the value
    # at module level: anywhere above counts
    ("import re\nmatched = 1\n\n<CURSOR>\n", "matched = re.sub(matched)", "matched = re.sub(matched)"),
    ("import re\n\n<CURSOR>\nmatched = 1\n", "matched = re.sub(matched)", "matched = re.sub("),
]


@pytest.mark.parametrize(("src", "raw", "expected"), CASES + LOCAL_CASES + SELF_CASES)
def test_names_in_scope_golden(candidate, src, raw, expected):
    assert names_in_scope(candidate("python", src, raw, True)).text == expected


def test_the_word_an_answer_was_cut_in_is_not_judged(candidate):
    """An answer cut short mid-word (`Candidate.whole` goes on with word characters) ends in a word still being
    written: only the finished words before it are judged."""
    c = candidate("python", "def f(a):\n    return a + <CURSOR>\n", "undefined_na")
    assert names_in_scope(dataclasses.replace(c, whole="undefined_name")).text == "undefined_na"
    c = candidate("python", "def f(a):\n    return a + <CURSOR>\n", "b + undefined_na")
    assert names_in_scope(dataclasses.replace(c, whole="b + undefined_name")).text == ""


def test_other_languages_are_not_judged(candidate):
    c = candidate("javascript", "function f(a) {\n  return <CURSOR>\n}\n", "b + c;")
    assert names_in_scope(c).text == "b + c;"
