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
