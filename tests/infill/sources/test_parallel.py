"""Rule under test: two places of the same shape but for names give the renaming from theirs to ours; a copied
rest gets it in its code, not in its strings and comments."""

import pytest

from diffill.infill.sources.parallel import renamed, renaming

# (their text, our text) pairs -> their name: ours
RENAMINGS = [
    ([("config = ConvertingDi", "value = ConvertingDi")], {"config": "value"}),
    ([("except BaseException as exc:", "except BaseException as ex:")], {"exc": "ex"}),
    ([("self.days = days", "self.minutes = minutes")], {"days": "minutes"}),
    # another shape, or the same text: nothing
    ([("x = f(a)", "x = f(a, b)")], {}),
    ([("x = f(a)", "x = f(a)")], {}),
    ([("x = f(1)", "x = f(2)")], {}),  # values are not names
    # values may differ where names are renamed; the words of a string are not names
    ([("f('code_action', default=A)", "f('publish_diagnostics', default=B)")], {"A": "B"}),
    ([("x = 'a b'", "x = 'a c d'")], {}),
    ([("x = f(1)", "x = f(y)")], {}),
    # nothing shared: too loose an analogy
    ([("a = b", "c - d")], {}),
    ([("a = b", "c = d")], {}),
    ([("total = compute()", "count = measure()")], {}),
    ([("name", "other")], {"name": "other"}),  # one name alone (the typed text before a matched key)
    # a name that would map two ways, or two names onto one: left out
    ([("f(a, a)", "f(b, c)")], {}),
    ([("f(a, b)", "f(c, c)")], {}),
    ([("x = a", "x = b"), ("y = a", "y = c")], {}),
    # pairs agree: both kept
    ([("x = a", "x = b"), ("f(p)", "f(q)")], {"a": "b", "p": "q"}),
]


@pytest.mark.parametrize(("pairs", "expected"), RENAMINGS)
def test_renaming(pairs, expected):
    assert renaming(pairs) == expected


def test_renaming_by_the_ends_two_texts_share():
    """Before a copied rest, one place may start further left (a parameter on the `def` line, the other on its
    own line): with `tail`, the ends they share are compared."""
    pair = ("default: T.Symbol) -> T", "def get(x: T.Caps, default: T.Diagnostics) -> T")
    assert renaming([pair]) == {}
    assert renaming([pair], tail=True) == {"Symbol": "Diagnostics"}
    assert renaming([("f(a, default: T.Symbol) -> T", "default: T.Diagnostics) -> T")], tail=True) == {
        "Symbol": "Diagnostics"
    }


def test_renamed_swaps_names_in_code_not_prose():
    mapping = {"exc": "ex", "config": "value"}
    assert renamed("tion(exc)", mapping) == "tion(ex)"
    assert renamed("f(exc, excess, config.exc)", mapping) == "f(ex, excess, value.ex)"
    assert renamed("log('exc %s', exc)  # exc", mapping) == "log('exc %s', ex)  # exc"
    assert renamed('raise E(f"bad {config}")', mapping) == 'raise E(f"bad {config}")'
    assert renamed("tion(exc)", {}) == "tion(exc)"
