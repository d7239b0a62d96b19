#!/usr/bin/env python3
"""Mechanically rewrite ELSPETH 0.7.1's Python 3.12-only syntax for Python 3.11.

    python3 rewrite_py312.py SRC_DIR        (rewrites every *.py under SRC_DIR in place)

Runs on Python 3.11 with its own tokenizer and ast. Three constructs (PEP 695):

1. `type X = EXPR` (module level)  ->  `X = EXPR`
   A plain, eager assignment.  Python 3.12 evaluates an alias's value lazily,
   so when EXPR names something not yet bound at that point of the module
   (a class defined further down, a name imported only under TYPE_CHECKING,
   or the alias itself: a recursive alias) the value is kept as a string,
   `X = '''EXPR'''` (triple-quoted), which typing and pydantic resolve as a forward reference.
2. `def f[T, B: Bound, **P](...)` -> `def f(...)` with `T = TypeVar("T")`,
   `B = TypeVar("B", bound=Bound)`, `P = ParamSpec("P")` declared just
   before the statement (its decorators) at the same indentation.
3. `class C[T](Bases):` -> `class C(Bases, Generic[T]):` with the same
   declarations.

Line numbers are kept where possible: a declaration replaces a blank line
directly before the statement when there is one (tracebacks then point at the
same lines as upstream's).  Nothing else changes, so no run-time behaviour on
the per-row path changes: aliases are only ever used in annotations, `get_args`
and pydantic fields, all of which see the same types.
"""
from __future__ import annotations

import ast
import builtins
import io
import pathlib
import sys
import tokenize

TYPING_IMPORT = "from typing import Generic as _Generic695, ParamSpec as _ParamSpec695, TypeVar as _TypeVar695, TypeVarTuple as _TypeVarTuple695"


def _logical_lines(tokens):
    """Yield lists of tokens, one list per logical line (NEWLINE-terminated)."""
    cur = []
    for tok in tokens:
        if tok.type in (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING):
            if tok.type in (tokenize.INDENT, tokenize.DEDENT):
                continue
            if not cur:
                continue
            if tok.type == tokenize.NL:
                continue
        if tok.type == tokenize.ENDMARKER:
            break
        cur.append(tok)
        if tok.type == tokenize.NEWLINE:
            yield cur
            cur = []
    if cur:
        yield cur


def _offsets(text):
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return lambda pos: starts[pos[0] - 1] + pos[1]


def _match_bracket(toks, i):
    """toks[i] is '['; return index of its matching ']'."""
    depth = 0
    for j in range(i, len(toks)):
        if toks[j].type == tokenize.OP and toks[j].string in "([{":
            depth += 1
        elif toks[j].type == tokenize.OP and toks[j].string in ")]}":
            depth -= 1
            if depth == 0:
                return j
    raise ValueError("unbalanced brackets")


def _split_params(text, toks, a, b, off):
    """Type params between toks[a]='[' and toks[b]=']' -> [(kind, name, bound_text)]."""
    params, depth, start = [], 0, a + 1
    groups = []
    for j in range(a + 1, b + 1):
        t = toks[j]
        if t.type == tokenize.OP and t.string in "([{":
            depth += 1
        elif t.type == tokenize.OP and t.string in ")]}" and j != b:
            depth -= 1
        if (j == b) or (depth == 0 and t.type == tokenize.OP and t.string == ","):
            if j > start:
                groups.append(toks[start:j])
            start = j + 1
    for g in groups:
        kind = "T"
        k = 0
        if g[0].string == "**":
            kind, k = "P", 1
        elif g[0].string == "*":
            kind, k = "Ts", 1
        name = g[k].string
        bound = None
        if len(g) > k + 1:
            assert g[k + 1].string == ":", g
            bound = text[off(g[k + 2].start):off(g[-1].end)]
        params.append((kind, name, bound))
    return params


def _decl(params):
    out = []
    for kind, name, bound in params:
        if kind == "P":
            out.append(f'{name} = _ParamSpec695("{name}")')
        elif kind == "Ts":
            out.append(f'{name} = _TypeVarTuple695("{name}")')
        elif bound is None:
            out.append(f'{name} = _TypeVar695("{name}")')
        elif bound.lstrip().startswith("("):  # constrained: [T: (int, str)]
            out.append(f'{name} = _TypeVar695("{name}", *{bound})')
        else:
            out.append(f'{name} = _TypeVar695("{name}", bound={bound})')
    return "; ".join(out)


def rewrite_syntax(text):
    """Pass 1: token-level rewrite. Returns (new_text, alias_names)."""
    toks = list(tokenize.generate_tokens(io.StringIO(text).readline))
    off = _offsets(text)
    lines = text.splitlines(keepends=True)
    edits = []  # (start, end, replacement)
    inserts = {}  # line number (1-based) of statement start -> (indent, decl)
    aliases = []
    for ll in _logical_lines(toks):
        # skip decorators: the statement proper starts after the last decorator line
        first = ll[0]
        if (first.type == tokenize.NAME and first.string == "type" and len(ll) > 2
                and ll[1].type == tokenize.NAME and ll[2].type == tokenize.OP and ll[2].string in ("=", "[")):
            if ll[2].string == "[":
                raise SystemExit(f"generic type alias not supported: line {first.start[0]}")
            edits.append((off(first.start), off(ll[1].start), ""))
            aliases.append((ll[1].string, first.start[0]))
            continue
        i = 0
        if ll[0].string == "async":
            i = 1
        if ll[i].type == tokenize.NAME and ll[i].string in ("def", "class") and len(ll) > i + 2 \
                and ll[i + 2].type == tokenize.OP and ll[i + 2].string == "[":
            a = i + 2
            b = _match_bracket(ll, a)
            params = _split_params(text, ll, a, b, off)
            if ll[i].string == "def":
                edits.append((off(ll[a].start), off(ll[b].end), ""))
            else:
                generic = "_Generic695[" + ", ".join(("*" + n) if k == "Ts" else n for k, n, _ in params) + "]"
                if b + 1 < len(ll) and ll[b + 1].string == "(":
                    c = _match_bracket_paren(ll, b + 1)
                    inner = text[off(ll[b + 1].end):off(ll[c].start)]
                    sep = ", " if inner.strip() else ""
                    if inner.rstrip().endswith(","):
                        sep = " "
                    edits.append((off(ll[a].start), off(ll[b].end), ""))
                    edits.append((off(ll[c].start), off(ll[c].start), sep + generic))
                else:
                    edits.append((off(ll[a].start), off(ll[b].end), "(" + generic + ")"))
            # where the statement (with its decorators) begins
            stmt_line = ll[0].start[0]
            indent = lines[stmt_line - 1][: len(lines[stmt_line - 1]) - len(lines[stmt_line - 1].lstrip())]
            n = stmt_line - 1
            while n >= 1 and lines[n - 1].strip().startswith("@") and lines[n - 1].startswith(indent):
                n -= 1
            inserts[n + 1] = (indent, _decl(params))
    # apply token edits back to front
    for s, e, rep in sorted(edits, reverse=True):
        text = text[:s] + rep + text[e:]
    if not inserts:
        return text, aliases
    # insert declarations (line numbers unchanged by the edits above: none spans lines)
    lines = text.splitlines(keepends=True)
    for ln in sorted(inserts, reverse=True):
        indent, decl = inserts[ln]
        if ln >= 2 and lines[ln - 2].strip() == "":
            lines[ln - 2] = indent + decl + "\n"
        else:
            lines.insert(ln - 1, indent + decl + "\n")
    text = "".join(lines)
    # the typing import: after the module docstring / __future__ imports
    tree = ast.parse(text)
    after = 0
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str) and after == 0:
            after = node.end_lineno
        elif isinstance(node, ast.ImportFrom) and node.module == "__future__":
            after = node.end_lineno
        else:
            break
    lines = text.splitlines(keepends=True)
    if after < len(lines) and lines[after].strip() == "" and after + 1 < len(lines) and lines[after + 1].strip() == "":
        lines[after] = TYPING_IMPORT + "\n"  # two blank lines: use one
    else:
        lines.insert(after, TYPING_IMPORT + "\n")
    return "".join(lines), aliases


def _match_bracket_paren(toks, i):
    return _match_bracket(toks, i)


def _is_type_checking(test):
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _bound_names(stmt):
    out = set()
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        for a in stmt.names:
            out.add((a.asname or a.name).split(".")[0])
    elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        out.add(stmt.name)
    elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name):
                    out.add(n.id)
    elif isinstance(stmt, ast.If):
        if not _is_type_checking(stmt.test):
            for s in stmt.body + stmt.orelse:
                out |= _bound_names(s)
    elif isinstance(stmt, ast.Try):
        for s in stmt.body + stmt.orelse + stmt.finalbody + [x for h in stmt.handlers for x in h.body]:
            out |= _bound_names(s)
    return out


def quote_forward_aliases(text, aliases):
    """Pass 2: an alias whose value names something unbound at that point becomes a string."""
    if not aliases:
        return text
    alias_lines = {ln for _, ln in aliases}
    tree = ast.parse(text)
    bound = set(dir(builtins))
    lines = text.splitlines(keepends=True)
    edits = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and stmt.lineno in alias_lines:
            used = {n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name)}
            name = stmt.targets[0].id
            if (used - bound) or name in used:
                edits.append(stmt.value)
        bound |= _bound_names(stmt)
    for v in sorted(edits, key=lambda v: (v.lineno, v.col_offset), reverse=True):
        # value text spans (lineno,col_offset)..(end_lineno,end_col_offset); keep the newlines
        s_line, s_col, e_line, e_col = v.lineno - 1, v.col_offset, v.end_lineno - 1, v.end_col_offset
        seg_lines = lines[s_line:e_line + 1]
        # byte offsets -> str offsets
        def col(line, b):
            return len(line.encode()[:b].decode())
        head = seg_lines[0][:col(seg_lines[0], s_col)]
        tail = seg_lines[-1][col(seg_lines[-1], e_col):]
        if len(seg_lines) == 1:
            body = seg_lines[0][col(seg_lines[0], s_col):col(seg_lines[0], e_col)]
        else:
            body = seg_lines[0][col(seg_lines[0], s_col):] + "".join(seg_lines[1:-1]) + seg_lines[-1][:col(seg_lines[-1], e_col)]
        if '"""' in body:
            raise SystemExit("cannot quote alias value containing triple quotes")
        # ForwardRef compiles the string in 'eval' mode: a multi-line value must be parenthesised
        if "\n" in body and not (body.startswith("(") and body.endswith(")")):
            body = "(" + body + ")"
        lines[s_line:e_line + 1] = [head + '"""' + body + '"""' + tail]
        lines = "".join(lines).splitlines(keepends=True)
    return "".join(lines)


def rewrite(text):
    new, aliases = rewrite_syntax(text)
    new = quote_forward_aliases(new, aliases)
    compile(new, "<rewritten>", "exec")
    return new


def main(root):
    n = 0
    for p in sorted(pathlib.Path(root).rglob("*.py")):
        text = p.read_text(encoding="utf-8")
        try:
            compile(text, str(p), "exec")
            continue
        except SyntaxError:
            pass
        new = rewrite(text)
        if new != text:
            p.write_text(new, encoding="utf-8")
            n += 1
    print(f"rewrite_py312: {n} files rewritten", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "src")
