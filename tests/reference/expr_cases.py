#!/usr/bin/env python3
"""Record ELSPETH 0.4.1's own expression-parser test cases as data.

    python3 tests/reference/expr_cases.py GIT_DIR > tests/fixtures/elspeth_expr_cases.json

GIT_DIR is a git copy of github.com/tachyon-beep/elspeth holding 0.4.1
(de732358). The script takes src/elspeth/core/expression_parser.py and
tests/unit/engine/test_expression_parser.py from it, runs every test that
does not need Hypothesis (pytest and hypothesis are stubbed: neither is
needed here), and records what ELSPETH's ExpressionParser did on each call:
the expression compiled or was refused (security or syntax error), and for
each evaluate() the row and the result (type, JSON form, str()) or the
evaluation error. tests/unit/test_dag_expr_elspeth.c replays the recording
against our parser; nothing at test time needs Python.

Cases outside our language are left out and counted: allowed_names other
than row (ELSPETH's commencement gates), rows that are not JSON, and
expressions longer than 400 characters (the deterministic fuzz's long
garbage; our own tests and the fuzzer cover length).
"""
import contextlib
import json
import math
import subprocess
import sys
import types

COMMIT = "de732358a8a7c24b243e495aec585cd53f9f3489"
MAX_EXPR = 400


def git_show(git_dir, path):
    return subprocess.run(["git", "--git-dir", git_dir, "show", f"{COMMIT}:{path}"],
                          check=True, capture_output=True, text=True).stdout


def install_stubs():
    """elspeth.contracts.errors, pytest and hypothesis: just enough."""
    errors = types.ModuleType("elspeth.contracts.errors")

    class AuditIntegrityError(Exception):
        pass

    class FrameworkBugError(Exception):
        pass

    errors.AuditIntegrityError = AuditIntegrityError
    errors.FrameworkBugError = FrameworkBugError
    for name in ("elspeth", "elspeth.contracts", "elspeth.core"):
        sys.modules[name] = types.ModuleType(name)
    sys.modules["elspeth.contracts.errors"] = errors

    pytest = types.ModuleType("pytest")

    class _Info:
        value = None

    @contextlib.contextmanager
    def raises(exc, match=None):
        info = _Info()
        try:
            yield info
        except exc as e:
            info.value = e
            return
        raise AssertionError(f"did not raise {exc}")

    def fail(msg):
        raise AssertionError(msg)

    class _Mark:
        def __getattr__(self, _name):
            return lambda *a, **k: (lambda f: f)

    pytest.raises = raises
    pytest.fail = fail
    pytest.mark = _Mark()
    sys.modules["pytest"] = pytest

    hyp = types.ModuleType("hypothesis")
    strategies = types.ModuleType("hypothesis.strategies")

    def needs_hypothesis(*_a, **_k):
        def deco(f):
            f.needs_hypothesis = True
            return f
        return deco

    class _Strategy:
        def __getattr__(self, _name):
            return lambda *a, **k: _Strategy()

        def __call__(self, *a, **k):
            return _Strategy()

        def __or__(self, _other):
            return self

    for name in ("text", "sampled_from", "integers", "floats", "lists",
                 "one_of", "just", "booleans", "dictionaries", "characters"):
        setattr(strategies, name, lambda *a, **k: _Strategy())
    strategies.composite = lambda f: (lambda *a, **k: _Strategy())
    strategies.DrawFn = object
    hyp.given = needs_hypothesis
    hyp.settings = needs_hypothesis
    hyp.strategies = strategies
    sys.modules["hypothesis"] = hyp
    sys.modules["hypothesis.strategies"] = strategies


def load(name, source):
    mod = types.ModuleType(name)
    mod.__file__ = name
    sys.modules[name] = mod
    exec(compile(source, name, "exec"), mod.__dict__)
    return mod


def json_form(v):
    """The value as JSON, or None when it has none (sets, tuples as lists)."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    try:
        return {"v": json.loads(json.dumps(v, allow_nan=False))}
    except (TypeError, ValueError):
        return None


def main():
    git_dir = sys.argv[1]
    install_stubs()
    ep = load("elspeth.core.expression_parser",
              git_show(git_dir, "src/elspeth/core/expression_parser.py"))
    real = ep.ExpressionParser
    cases, skipped = [], {"allowed_names": 0, "row_not_json": 0, "long": 0}
    current = {"test": None}

    class Recording(real):
        def __init__(self, expression, *, allowed_names=None):
            self._rec = None
            entry = {"test": current["test"], "expr": expression}
            keep = True
            if allowed_names is not None:
                skipped["allowed_names"] += 1
                keep = False
            elif len(expression) > MAX_EXPR:
                skipped["long"] += 1
                keep = False
            try:
                super().__init__(expression, allowed_names=allowed_names)
            except ep.ExpressionSecurityError as e:
                entry["refused"] = "security"
                entry["message"] = str(e)
                if keep:
                    cases.append(entry)
                raise
            except ep.ExpressionSyntaxError as e:
                entry["refused"] = "syntax"
                entry["message"] = str(e)
                if keep:
                    cases.append(entry)
                raise
            entry["boolean"] = real.is_boolean_expression(self)
            entry["evals"] = []
            if keep:
                cases.append(entry)
                self._rec = entry

        def evaluate(self, context):
            rec = {"row": context}
            try:
                json.dumps(context, allow_nan=False)
                row_ok = isinstance(context, dict)
            except (TypeError, ValueError):
                row_ok = False
            try:
                v = super().evaluate(context)
            except ep.ExpressionEvaluationError as e:
                rec["error"] = str(e)
                self._keep(rec, row_ok)
                raise
            rec["type"] = type(v).__name__
            rec["str"] = str(v)
            form = json_form(v)
            if form is not None:
                rec["json"] = form["v"]
            self._keep(rec, row_ok)
            return v

        def _keep(self, rec, row_ok):
            if self._rec is None:
                return
            if not row_ok:
                skipped["row_not_json"] += 1
                return
            self._rec["evals"].append(rec)

    ep.ExpressionParser = Recording
    tests = load("test_expression_parser",
                 git_show(git_dir, "tests/unit/engine/test_expression_parser.py"))
    tests.ExpressionParser = Recording
    ran = 0
    for cname, cls in sorted(vars(tests).items()):
        if not (cname.startswith("Test") and isinstance(cls, type)):
            continue
        for mname in sorted(vars(cls)):
            fn = getattr(cls, mname)
            if not mname.startswith("test_") or getattr(fn, "needs_hypothesis", False):
                continue
            current["test"] = f"{cname}.{mname}"
            try:
                getattr(cls(), mname)()
                ran += 1
            except Exception as e:  # a test that needs what we stubbed
                print(f"{cname}.{mname}: {type(e).__name__}: {e}", file=sys.stderr)
    print(f"{ran} tests ran, {len(cases)} expressions recorded, skipped {skipped}",
          file=sys.stderr)
    # One case per line: diffs stay readable when the recording is redone.
    head = json.dumps({"elspeth_commit": COMMIT, "skipped": skipped},
                      sort_keys=True)
    print(head[:-1] + ', "cases": [')
    print(",\n".join(json.dumps(c, ensure_ascii=False, sort_keys=True)
                     for c in cases))
    print("]}")


if __name__ == "__main__":
    main()
