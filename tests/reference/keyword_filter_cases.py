#!/usr/bin/env python3
"""Record what ELSPETH 0.4.1's keyword_filter does, as data.

    ref=~/.cache/elspeth-ref   # after /work/shared/elspeth-reference/setup.sh
    PYTHONPATH=$ref/shim:$ref/src python3 tests/reference/keyword_filter_cases.py \
        > tests/fixtures/keyword_filter/cases.json

Each case is the options (`fields`, `blocked_patterns`) and a row; ELSPETH's
own KeywordFilter (plugins/transforms/keyword_filter.py) is built from them
and run on the row, and what it did is recorded: "config_error" (with the
message) when the options are refused, else "ok" or "error" with the reason
dict exactly as ELSPETH returns it. tests/unit/test_plugins_keyword_filter.c
replays the file against ours; nothing at test time needs Python.

Where we differ on purpose (ADR 0026) a case says so: "ours": "refused"
(Python accepts it) or "ours": "accepted" (Python refuses it).
"""
import json
import sys

from elspeth.plugins.transforms.keyword_filter import KeywordFilter
from elspeth.contracts.schema_contract import PipelineRow, SchemaContract, FieldContract

# (pattern, text) pairs over Python's re language: each run with fields [t].
SEARCH = [
    (r"(?i)\bpassword\b", "Password reset for admin account"),
    (r"(?i)\bpassword\b", "Follow up on password policy audit"),
    (r"(?i)\bpassword\b", "passwords are not matched"),
    (r"(?i)\bconfidential\b", "Warehouse expansion - CONFIDENTIAL draft"),
    (r"(?i)\bsecret\b", "top-secret plans"),
    (r"\bsecret\b", "Secret"),
    (r"\d{3}-\d{2}-\d{4}", "SSN 123-45-6789 here"),
    (r"\d+", "price \u0661\u0662\u0663 in Arabic-Indic digits"),
    (r"\w+", "\u00e9t\u00e9 caf\u00e9"),
    (r"caf\u00e9\b", "le caf\u00e9 noir"),
    (r"\bnoir", "caf\u00e9noir noir"),
    (r"\s+", "a\u00a0b"),
    (r"\s", "a\u2003b"),
    (r"(?i)stra\u00dfe", "STRASSE and Stra\u00dfe"),
    (r"(?i)k", "\u212a"),
    (r"(?i)s", "\u017f"),
    (r"(?i)\u00e9", "\u00c9COLE"),
    (r"\U0001F600", "smile \U0001F600 ok"),
    (r"\U0001F600+", "\U0001F600\U0001F600 x"),
    (r"\u00e9", "caf\u00e9"),
    (r"\x41", "xA"),
    (r"\101", "zzA"),
    (r"\0", "a\x00b"),
    (r"[\101-\103]+", "xxABCD"),
    (r"\v", "a\x0bb"),
    (r"\v", "a\nb"),
    (r"a\Z", "a\n"),
    (r"a$", "a\n"),
    (r"a\Z", "ba"),
    (r"\Aab", "abab"),
    (r"x{,2}y", "xxxy"),
    (r"x{,}y", "xxxy"),
    (r"x{2,}y", "xy xxy"),
    (r"a{", "a{"),
    (r"a{1", "a{1"),
    (r"[[:alpha:]]+", "abc[:]"),
    (r"[[]", "x[y"),
    (r"[]a]+", "b]a]"),
    (r"[^]a]+", "]]bc"),
    (r"[\b]", "a\x08b"),
    (r"(?<=\$)\d+", "cost $42"),
    (r"(?<!\$)\b\d+", "$42 and 17"),
    (r"foo(?=bar)", "foobaz foobar"),
    (r"foo(?!bar)", "foobar foobaz"),
    (r"<.+?>", "<a><b>"),
    (r"<.+>", "<a><b>"),
    (r"(?P<word>\w+) (?P=word)", "say hello hello"),
    (r"(\w)\1", "abccd"),
    (r"(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)\10", "abcdefghijj"),
    (r"(?:ab)+", "xxababab"),
    (r"(?i:AB)c", "abc abC"),
    (r"(?-i:a)", "A a"),
    (r"(?i)(?-i:a)B", "Ab ab aB"),
    (r"(?s)a.b", "a\nb"),
    (r"a.b", "a\nb axb"),
    (r"(?m)^b", "a\nb"),
    (r"^b", "a\nb"),
    (r"(?x) a b  # comment [\n c", "abc"),
    (r"(?x)a\ b", "a b"),
    (r"(?x)[ ]x", "a x"),
    (r"(?#comment)abc", "xabc"),
    (r"(a)?(?(1)b|c)", "c ab"),
    (r"(?P<q>')?x(?(q)')", "'x'"),
    (r"(?>a+)b", "aaab"),
    (r"a++b", "aaab"),
    (r"(?u)\w", "\u00e9"),
    (r"\.\-\ \#", "a.- #b"),
    (r"\t|\n|\r|\f|\a", "x\ty"),
    (r"\B\w", " ab"),
    (r"[\d\s]+", "ab 12 c"),
    (r"[^\W\d]+", "12ab_c3"),
    (r"\$\{x\}", "a${x}"),
    # patterns Python refuses
    (r"abc(?i)def", "abcdef"),
    (r"a|(?i)b", "b"),
    (r"\p{L}", "a"),
    (r"\h", "a"),
    (r"\K", "a"),
    (r"\G", "a"),
    (r"\Qa.b\E", "a.b"),
    (r"\R", "\n"),
    (r"\X", "a"),
    (r"\z", "a"),
    (r"\x4", "a"),
    (r"\u12", "a"),
    (r"(?<name>a)", "a"),
    (r"(?'name'a)", "a"),
    (r"(?|(a)|(b))", "a"),
    (r"(a)(?1)", "aa"),
    (r"(?R)?a", "a"),
    (r"(?P>n)", "a"),
    (r"(*UTF)a", "a"),
    (r"(?(?=a)a|b)", "a"),
    (r"(?i-i:a)", "a"),
    (r"(?-i)a", "a"),
    (r"(?z)a", "a"),
    (r"[\A]", "a"),
    (r"\777", "a"),
    (r"(?<=a|bc)x", "bcx"),
    (r"(a", "a"),
    (r"a)", "a"),
    (r"[a", "a"),
    (r"*a", "a"),
    (r"a**", "a"),
    (r"\2(a)", "aa"),
    # ours: refused although Python accepts (ADR 0026)
    (r"\N{LATIN SMALL LETTER E WITH ACUTE}", "\u00e9"),
    (r"(?a)\w+", "\u00e9a"),
    (r"(?L)a", "a"),
    # ELSPETH's own checks
    (r"(a+)+", "aaaa"),
    (r"(a*)*b", "ab"),
    (r"(x+x+)+y", "xxy"),
    (r"a" * 1001, "a"),
    ("", "a"),
]
OURS_REFUSED = {r"\N{LATIN SMALL LETTER E WITH ACUTE}", r"(?a)\w+"}
# ours: accepted although Python refuses (PCRE2 allows alternatives of
# different fixed lengths in a lookbehind; ADR 0026)
OURS_ACCEPTED = {r"(?<=a|bc)x"}

# (fields, row) with fixed patterns: scanning rules.
PATTERNS = [r"(?i)\bpassword\b", r"secret"]
SCAN = [
    (["notes"], {"notes": "my password", "id": 1}),
    (["notes"], {"notes": "nothing here"}),
    (["notes"], {"id": 1}),
    (["notes"], {"notes": 42}),
    (["notes"], {"notes": 4.5}),
    (["notes"], {"notes": True}),
    (["notes"], {"notes": None}),
    (["notes"], {"notes": {"a": "password"}}),
    (["notes"], {"notes": ["password"]}),
    (["a", "b"], {"a": "fine", "b": "a secret"}),
    (["a", "b"], {"a": "secret password", "b": "x"}),
    (["a", "b"], {"a": 1, "b": "secret"}),
    (["b", "a"], {"a": 1, "b": "secret"}),
    ("notes", {"notes": "PASSWORD!"}),
    ("all", {"id": 7, "x": "clean", "y": "secret"}),
    ("all", {"id": 7, "x": None, "y": ["secret"], "z": "ok"}),
    ("all", {"y": "secret", "x": "password"}),
    ("all", {"all": "clean"}),
    (["all"], {"all": "secret"}),
    (["t"], {"t": "\u00e9\u00e9 secret \U0001F600"}),
    ([], {"a": "x"}),
    ("", {"a": "x"}),
    ("  ", {"a": "x"}),
    (["a", " "], {"a": "x"}),
]


def contract(row):
    fields = tuple(FieldContract(normalized_name=k, original_name=k, python_type=object,
                                 required=False, source="inferred") for k in row)
    return SchemaContract(mode="OBSERVED", fields=fields, locked=True)


def run(fields, patterns, row):
    try:
        kf = KeywordFilter({"fields": fields, "blocked_patterns": patterns,
                            "schema": {"mode": "observed"}})
    except Exception as e:  # pydantic ValidationError, PluginConfigError
        lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
        detail = next((ln for ln in lines if ln.startswith("Value error")), lines[-1])
        return {"result": "config_error", "message": detail[:300]}
    res = kf.process(PipelineRow(row, contract(row)), None)
    if res.status == "success":
        return {"result": "ok"}
    return {"result": "error", "reason": dict(res.reason)}


def main():
    cases = []
    for p, text in SEARCH:
        c = {"fields": ["t"], "blocked_patterns": [p], "row": {"t": text}}
        c.update(run(["t"], [p], {"t": text}))
        if p in OURS_REFUSED:
            c["ours"] = "refused"
        if p in OURS_ACCEPTED:
            c["ours"] = "accepted"
        cases.append(c)
    for fields, row in SCAN:
        c = {"fields": fields, "blocked_patterns": PATTERNS, "row": row}
        c.update(run(fields, PATTERNS, row))
        cases.append(c)
    json.dump({"elspeth": "0.4.1", "python": sys.version.split()[0], "cases": cases},
              sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
