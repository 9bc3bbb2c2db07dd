"""Generates the Unicode tables of the text tokenizer (csrc/text) from Python's unicodedata.

Runs at build time (a meson custom_target) and writes one C file of constant tables:
  - per code point, two-level (a block index, then 128-entry blocks shared between equal
    blocks): flags (control, whitespace, punctuation, nonspacing mark, has a lowercase
    mapping, has a canonical decomposition, letter, number) and the canonical combining class;
  - sorted code point lists with their full lowercase mapping and full canonical decomposition
    (Hangul syllables are left to the algorithm in csrc/text/unicode.c).

The properties are what the `tokenizers` package's BERT components use: a control character is
one of general category Cc, Cf or Co other than tab, newline and carriage return; whitespace is
Unicode's White_Space (str.isspace less U+001C..U+001F, which Python alone counts); punctuation
is ASCII punctuation or general category P*; a nonspacing mark is category Mn; the lowercase
mapping is the per-character full mapping (no final-sigma context). Letters (general category
L*) and numbers (N*) are what the byte-level BPE pre-tokenizer's pattern calls \\p{L} and \\p{N}.

`tokenizers` takes these facts from Rust crates built on other Unicode versions than this
Python's (its category and normalization crates are older, Rust's own case mapping is newer).
tools/unicode_tokenizers.txt records each code point where the package answers differently
from the rules above; it is written by `python tools/gen_unicode_tables.py --probe-tokenizers
tools/unicode_tokenizers.txt`, which asks the installed package about every code point, and
applied over unicodedata's answers here. It also lists the code points unassigned in the
probing Python's Unicode version: a later Python may assign some, which the package's older
crates do not know either, so they keep an unassigned character's properties (the package's
case mappings of them, from Rust's newer data, are listed as overrides).

    python tools/gen_unicode_tables.py --overrides tools/unicode_tokenizers.txt --output F.c
"""

from __future__ import annotations

import argparse
import string
import sys
import unicodedata
from pathlib import Path

MAX_CODE_POINT = 0x110000
BLOCK = 128

CONTROL, WHITESPACE, PUNCTUATION, NONSPACING_MARK, HAS_LOWER, HAS_DECOMPOSITION = (
    1, 2, 4, 8, 16, 32)
LETTER, NUMBER = 64, 128
FLAG_NAMES = {"control": CONTROL, "whitespace": WHITESPACE, "punctuation": PUNCTUATION,
              "nonspacing_mark": NONSPACING_MARK, "letter": LETTER, "number": NUMBER}
HANGUL_FIRST, HANGUL_LAST = 0xAC00, 0xD7A3
ASCII_PUNCTUATION = {ord(c) for c in string.punctuation}


def is_surrogate(cp: int) -> bool:
    return 0xD800 <= cp <= 0xDFFF


def base_flags(cp: int) -> int:
    ch = chr(cp)
    category = unicodedata.category(ch)
    flags = 0
    if category in ("Cc", "Cf", "Co") and ch not in "\t\n\r":
        flags |= CONTROL
    if ch.isspace() and not 0x1C <= cp <= 0x1F:
        flags |= WHITESPACE
    if category.startswith("P") or cp in ASCII_PUNCTUATION:
        flags |= PUNCTUATION
    if category == "Mn":
        flags |= NONSPACING_MARK
    if category.startswith("L"):
        flags |= LETTER
    if category.startswith("N"):
        flags |= NUMBER
    return flags


def base_lower(cp: int) -> str:
    return chr(cp).lower()


def base_decomposition(cp: int) -> str:
    return unicodedata.normalize("NFD", chr(cp))


def read_overrides(path: Path | None) -> dict[str, dict[int, object]]:
    overrides: dict[str, dict[int, object]] = {"flag": {}, "lower": {}, "nfd": {}, "ccc": {},
                                               "unassigned": {}}
    if path is None:
        return overrides
    for number, line in enumerate(path.read_text().splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        kind = words[0]
        # A flag may name a range of code points: "letter 1C89..1C8A 1".
        first, _, last = words[1].partition("..") if kind in FLAG_NAMES else (words[1], "", "")
        cp = int(first, 16) if kind != "unicode" else 0
        if kind == "unicode":
            if words[1] != unicodedata.unidata_version:
                print(f"gen_unicode_tables: {path} was probed with Unicode {words[1]}, this "
                      f"Python has {unicodedata.unidata_version}", file=sys.stderr)
        elif kind == "unassigned":
            for code_point in range(cp, int(words[2], 16) + 1):
                overrides["unassigned"][code_point] = True
        elif kind in FLAG_NAMES:
            for code_point in range(cp, int(last or first, 16) + 1):
                overrides["flag"][code_point] = overrides["flag"].get(code_point, ()) + (
                    (FLAG_NAMES[kind], words[2] == "1"),)
        elif kind in ("lower", "nfd"):
            overrides[kind][cp] = "".join(chr(int(w, 16)) for w in words[2:])
        elif kind == "ccc":
            overrides["ccc"][cp] = int(words[2])
        else:
            sys.exit(f"gen_unicode_tables: {path}:{number}: unknown property {kind!r}")
    return overrides


def tables(overrides: dict[str, dict[int, object]]):
    flags = [0] * MAX_CODE_POINT
    ccc = [0] * MAX_CODE_POINT
    lower: dict[int, str] = {}
    decomposition: dict[int, str] = {}
    for cp in range(MAX_CODE_POINT):
        if is_surrogate(cp):
            continue
        unassigned = cp in overrides["unassigned"]
        f = 0 if unassigned else base_flags(cp)
        for flag, on in overrides["flag"].get(cp, ()):
            f = f | flag if on else f & ~flag
        low = overrides["lower"].get(cp, chr(cp) if unassigned else base_lower(cp))
        if low != chr(cp):
            lower[cp] = low
            f |= HAS_LOWER
        if not HANGUL_FIRST <= cp <= HANGUL_LAST:
            nfd = overrides["nfd"].get(cp, chr(cp) if unassigned else base_decomposition(cp))
            if nfd != chr(cp):
                decomposition[cp] = nfd
                f |= HAS_DECOMPOSITION
        flags[cp] = f
        ccc[cp] = overrides["ccc"].get(cp, 0 if unassigned else unicodedata.combining(chr(cp)))
    return flags, ccc, lower, decomposition


def two_level(values: list[int]) -> tuple[list[int], list[int]]:
    index, blocks, seen = [], [], {}
    for start in range(0, MAX_CODE_POINT, BLOCK):
        block = tuple(values[start:start + BLOCK])
        if block not in seen:
            seen[block] = len(seen)
            blocks.extend(block)
        index.append(seen[block])
    return index, blocks


def c_array(kind: str, name: str, values: list[int]) -> str:
    lines = []
    for i in range(0, len(values), 16):
        lines.append("    " + ", ".join(str(v) for v in values[i:i + 16]) + ",")
    return f"const {kind} {name}[{len(values)}] = {{\n" + "\n".join(lines) + "\n};\n"


def mapping_arrays(name: str, mapping: dict[int, str]) -> str:
    keys = sorted(mapping)
    pool: list[int] = []
    starts = []
    for cp in keys:
        starts.append(len(pool) << 8 | len(mapping[cp]))
        pool.extend(ord(c) for c in mapping[cp])
    return (f"const int32_t nxe_unicode_{name}_count = {len(keys)};\n"
            + c_array("uint32_t", f"nxe_unicode_{name}_keys", keys)
            + c_array("uint32_t", f"nxe_unicode_{name}_spans", starts)
            + c_array("uint32_t", f"nxe_unicode_{name}_pool", pool or [0]))


def generate(overrides_path: Path | None) -> str:
    flags, ccc, lower, decomposition = tables(read_overrides(overrides_path))
    index, blocks = two_level([f | c << 8 for f, c in zip(flags, ccc)])
    return (
        "/* Generated by tools/gen_unicode_tables.py from Python's unicodedata "
        f"{unicodedata.unidata_version}: do not edit. */\n"
        '#include "text/unicode.h"\n\n'
        + c_array("uint16_t", "nxe_unicode_index", index)
        + c_array("uint16_t", "nxe_unicode_blocks", blocks)
        + mapping_arrays("lower", lower)
        + mapping_arrays("nfd", decomposition)
    )


def probe_tokenizers(output: Path) -> None:
    """Writes where the installed `tokenizers` package disagrees with the rules above."""
    from tokenizers.normalizers import NFD, BertNormalizer
    from tokenizers.pre_tokenizers import BertPreTokenizer, ByteLevel

    clean = BertNormalizer(clean_text=True, handle_chinese_chars=False, strip_accents=False,
                           lowercase=False)
    lowercase = BertNormalizer(clean_text=False, handle_chinese_chars=False, strip_accents=False,
                               lowercase=True)
    strip = BertNormalizer(clean_text=False, handle_chinese_chars=False, strip_accents=True,
                           lowercase=False)
    nfd = NFD()
    pre = BertPreTokenizer()
    # GPT-2's pattern: a letter joins "a" and "a" into one piece, a number "1" and "1".
    byte_level = ByteLevel(add_prefix_space=False, use_regex=True)
    unassigned = set()
    ranges: dict[str, list[list[int]]] = {"letter": [], "number": []}
    lines = ["# Where the `tokenizers` package's Unicode data differs from Python's unicodedata "
             f"{unicodedata.unidata_version}:",
             "# written by tools/gen_unicode_tables.py --probe-tokenizers (package version "
             f"{__import__('tokenizers').__version__}); read by the same script at build time.",
             f"unicode {unicodedata.unidata_version}"]
    start = None
    for cp in range(MAX_CODE_POINT + 1):
        cn = cp < MAX_CODE_POINT and unicodedata.category(chr(cp)) == "Cn"
        if cn and start is None:
            start = cp
        elif not cn and start is not None:
            lines.append(f"unassigned {start:X} {cp - 1:X}")
            unassigned.update(range(start, cp))
            start = None

    def hexes(s: str) -> str:
        return " ".join(f"{ord(c):X}" for c in s)

    for cp in range(MAX_CODE_POINT):
        if is_surrogate(cp):
            continue
        ch = chr(cp)
        flags = base_flags(cp)
        pieces = len(pre.pre_tokenize_str("a" + ch + "a"))
        package = {
            "control": clean.normalize_str(ch) == "" and cp not in (0, 0xFFFD),
            "whitespace": pieces == 2,
            "punctuation": pieces == 3,
        }
        decomposed = nfd.normalize_str(ch)
        if decomposed == ch:
            package["nonspacing_mark"] = strip.normalize_str(ch) == ""
        for name, flag in FLAG_NAMES.items():
            if name in package and package[name] != bool(flags & flag):
                lines.append(f"{name} {cp:X} {int(package[name])}")
        for name, join in (("letter", "a"), ("number", "1")):
            has = len(byte_level.pre_tokenize_str(join + ch + join)) == 1
            base = cp not in unassigned and bool(flags & FLAG_NAMES[name])
            if has != base:
                last = ranges[name][-1] if ranges[name] else None
                if last and last[1] == cp - 1 and last[2] == has:
                    last[1] = cp
                else:
                    ranges[name].append([cp, cp, has])
        low = lowercase.normalize_str(ch)
        if low != base_lower(cp):
            lines.append(f"lower {cp:X} {hexes(low)}")
        if not HANGUL_FIRST <= cp <= HANGUL_LAST and decomposed != base_decomposition(cp):
            lines.append(f"nfd {cp:X} {hexes(decomposed)}")
        combining = unicodedata.combining(ch)
        if combining and decomposed == ch:
            # Reordered against a mark of a lower class: the package knows the class is not 0.
            probe, other = ("\u0301", 230) if combining == 1 else ("\u0334", 1)
            text = "a" + probe + ch if combining == 1 else "a" + ch + probe
            reordered = nfd.normalize_str(text) != text
            if not reordered:
                lines.append(f"ccc {cp:X} 0  # the package orders it as a starter ({other})")
    for name, spans in ranges.items():
        lines.extend(f"{name} {a:X}..{b:X} {int(has)}" for a, b, has in spans)
    output.write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--overrides", type=Path, help="tools/unicode_tokenizers.txt")
    parser.add_argument("--output", type=Path, help="the C file to write")
    parser.add_argument("--probe-tokenizers", type=Path, metavar="FILE",
                        help="write the overrides file from the installed tokenizers package")
    args = parser.parse_args()
    if args.probe_tokenizers:
        probe_tokenizers(args.probe_tokenizers)
        return
    if not args.output:
        parser.error("--output is required")
    args.output.write_text(generate(args.overrides))


if __name__ == "__main__":
    main()
