"""The words each language gives every program (its literals, builtin types and functions): replaced at a few of
their uses, they are no change to carry to the others, which use them for reasons of their own (`true` ->
`defaultCommandSorting` at two settings, `string` -> `Completion` in two signatures)."""

from __future__ import annotations

import builtins
import keyword

_C = "int char void long short unsigned signed float double size_t bool true false NULL nullptr auto const"
_JS = (
    "true false null undefined this NaN Infinity string number boolean any unknown never void object symbol bigint "
    "Object Array String Number Boolean Symbol Promise Error Map Set JSON Math console"
)
_WORDS: dict[str, frozenset[str]] = {
    "python": frozenset(dir(builtins)) | frozenset(keyword.kwlist) | frozenset(keyword.softkwlist),
    "go": frozenset(
        "bool byte complex64 complex128 error float32 float64 int int8 int16 int32 int64 rune string uint uint8 "
        "uint16 uint32 uint64 uintptr any comparable true false iota nil append cap clear close complex copy "
        "delete imag len make max min new panic print println real recover".split()
    ),
    "javascript": frozenset(_JS.split()),
    "typescript": frozenset(_JS.split()),
    "tsx": frozenset(_JS.split()),
    "rust": frozenset(
        "i8 i16 i32 i64 i128 isize u8 u16 u32 u64 u128 usize f32 f64 bool char str String Vec Box Option Result "
        "Some None Ok Err Self self true false".split()
    ),
    "c": frozenset(_C.split()),
    "cpp": frozenset(_C.split()) | frozenset("std string this".split()),
    "java": frozenset("int long short byte char boolean float double void String Object null true false this".split()),
    "lua": frozenset("nil true false self print pairs ipairs table string math type tostring tonumber".split()),
}


def predeclared(language: str | None, word: str) -> bool:
    """Whether `word` is one of the words `language` gives every program."""
    return word in _WORDS.get(language or "", frozenset())
