"""A module whose one name changes at several places: the next-edit tests' common document."""

SIGNING = """import hashlib


def sign(key, value):
    mac = hashlib.sha1(key)
    return mac.digest()


def verify(key, value):
    mac = hashlib.sha1(key)
    return mac.digest() == value


def derive(secret):
    return hashlib.sha1(secret)
"""

# the same with two more places of the change's shape: one for "apply here", two for "apply at all 2 places"
SIGNING_FOUR = (
    SIGNING + "\n\ndef more(key):\n    mac = hashlib.sha1(key)\n\n\ndef again(key):\n    mac = hashlib.sha1(key)\n"
)
