#!/usr/bin/env python3
"""property_gen.py SEED OUTDIR — a random but valid elspeth pipeline.

Writes OUTDIR/settings.yaml, the source data (OUTDIR/input.csv, .jsonl or
.json; the settings name it relative to OUTDIR, so run elspeth from
OUTDIR), OUTDIR/case.json (what was generated) and OUTDIR/case.txt (the
number of source records, then a one-line summary). The same SEED always
gives the same files. Every sink path is under ${ELSPETH_OUT_DIR}, so one
settings file can be run in several modes (see test_property.sh).
`property_gen.py --many SEED0 COUNT BASEDIR` writes BASEDIR/case-SEED for
COUNT seeds with one interpreter start.

The generator keeps a symbolic model of the rows on every connection (which
fields exist, always or sometimes, their types, whether nulls occur), so
that
  * gate conditions only read fields every row has (a run-time error in a
    condition stops the run: ADR 0003), and always give true/false;
  * csv sinks only get rows whose key set is fixed (a key not in a csv
    sink's header is a write error);
  * every transform or aggregation that can fail a row has an on_error;
  * delay transforms with error_rate only see distinct rows (the delay
    plugin remembers flaky rows by content, so identical rows in flight at
    once could use up each other's retries);
  * no json_explode or aggregation sits between a fork and the coalesce
    that joins it: validate accepts that, but the engine cannot join
    several (or branch-less) tokens of one branch and stops the run.
Python 3 standard library only.
"""
import csv
import json
import os
import random
import sys

INT, STR, FLOAT, ARR, OBJ = "int", "str", "float", "arr", "obj"
FIGURES = ("count", "sum", "batch_size", "mean")
STATS_ADDED = ("batch_count", "batch_sum", "batch_size", "batch_mean")


class F:
    """One field of the row model."""

    def __init__(self, typ, present=True, nonnull=True, sub=None):
        self.typ, self.present, self.nonnull, self.sub = typ, present, nonnull, sub

    def copy(self):
        return F(self.typ, self.present, self.nonnull,
                 self.sub.copy() if self.sub else None)

    def sure(self):
        return self.present and self.nonnull


class Shape:
    """The rows on one connection: fields (ordered), whether unknown extra
    keys may occur, whether rows are distinct."""

    def __init__(self, fields=None, extras=False, unique=True):
        self.fields = dict(fields or {})
        self.extras, self.unique = extras, unique

    def copy(self):
        return Shape({k: f.copy() for k, f in self.fields.items()},
                     self.extras, self.unique)

    def fixed(self):
        """Every row has exactly these keys (a csv sink can take them)."""
        return not self.extras and all(f.present for f in self.fields.values())

    def leaves(self, pred, prefix=()):
        """Paths to fields satisfying pred, walking into always-present
        objects."""
        out = []
        for name, f in self.fields.items():
            if f.typ == OBJ and f.sub is not None:
                if f.sure():
                    out += f.sub.leaves(pred, prefix + (name,))
            elif pred(f):
                out.append((prefix + (name,), f))
        return out

    def top(self, pred):
        return [n for n, f in self.fields.items() if pred(f)]


def q(s):
    """A Python-style single-quoted string literal for a condition."""
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


def ref(path):
    return "row" + "".join("[%s]" % q(p) for p in path)


class Gen:
    def __init__(self, seed, outdir):
        self.seed = seed
        self.rng = random.Random(seed)
        self.outdir = os.path.abspath(outdir)
        self.transforms, self.gates, self.coalesce, self.aggs = [], [], [], []
        self.sinks = {}          # name -> config
        self.sink_kind = {}      # name -> csv | json
        self.sink_producers = {}  # name -> count (csv sinks take one)
        self.n = 0
        self.budget = self.rng.randint(3, 14)
        self.error_sinks = []
        self.stats = {"kinds": []}

    # ------------------------------------------------------------ naming
    def uid(self, prefix):
        self.n += 1
        return "%s%d" % (prefix, self.n)

    def note(self, kind):
        self.stats["kinds"].append(kind)

    # ------------------------------------------------------------- sinks
    def out_path(self, name, ext):
        return "${ELSPETH_OUT_DIR}/%s.%s" % (name, ext)

    def new_json_sink(self, prefix="out"):
        r = self.rng
        name = self.uid(prefix)
        fmt = r.choice(["jsonl", "jsonl", "json"])
        opts = {"path": self.out_path(name, "jsonl" if fmt == "jsonl" else "json"),
                "format": fmt}
        if fmt == "json" and r.random() < 0.3:
            opts["indent"] = r.choice([0, 2])
        self.sinks[name] = {"plugin": "json", "options": opts}
        self.sink_kind[name] = "json"
        self.sink_producers[name] = 0
        return name

    def new_csv_sink(self):
        name = self.uid("csv")
        self.sinks[name] = {"plugin": "csv",
                            "options": {"path": self.out_path(name, "csv")}}
        self.sink_kind[name] = "csv"
        self.sink_producers[name] = 0
        return name

    def sink_for(self, shape, fresh=False):
        """A sink for rows of this shape (csv only for a fixed key set)."""
        r = self.rng
        if shape.fixed() and r.random() < 0.45:
            name = self.new_csv_sink()
        else:
            reuse = [k for k, v in self.sink_kind.items()
                     if v == "json" and k not in self.error_sinks]
            if reuse and not fresh and r.random() < 0.3:
                name = r.choice(reuse)
            else:
                name = self.new_json_sink()
        self.sink_producers[name] += 1
        return name

    def error_dest(self):
        """on_error: an error sink (json, since error rows vary) or discard."""
        r = self.rng
        if r.random() < 0.2:
            return "discard"
        if not self.error_sinks or (len(self.error_sinks) < 2 and r.random() < 0.2):
            self.error_sinks.append(self.new_json_sink("errors"))
        return r.choice(self.error_sinks)

    # ------------------------------------------------------------ source
    def make_source(self):
        r = self.rng
        kind = r.choice(["csv", "csv", "jsonl", "jsonl", "json"])
        nrows = r.randint(20, 300)
        # Which optional fields this source has, in a random order.
        extra = [f for f in ["n2", "k", "s1", "grp", "note", "tags", "codes", "f1"]
                 if r.random() < 0.6]
        if "tags" not in extra and r.random() < 0.7:
            extra.append("tags")
        r.shuffle(extra)
        fields = ["id", "n1"] + extra
        types = {"id": INT, "n1": INT, "n2": INT, "k": INT, "s1": STR,
                 "grp": STR, "note": STR, "tags": ARR, "codes": ARR,
                 "f1": FLOAT}
        mode = "fixed"
        if kind != "csv":
            mode = r.choice(["fixed", "flexible", "observed"])
        elif r.random() < 0.3:
            mode = "flexible"
        bad_rate = r.choice([0, 0.03, 0.08, 0.15])
        # JSON sources may hold real arrays ("any") or JSON text ("str").
        real_arrays = kind != "csv" and r.random() < 0.5
        decl = []
        for f in fields:
            t = types[f]
            if f == "note":
                decl.append("note: str?")
            elif t == ARR:
                decl.append("%s: %s" % (f, "any" if real_arrays else "str"))
            else:
                decl.append("%s: %s" % (f, t))
        schema = {"mode": mode}
        if mode != "observed":
            schema["fields"] = decl

        words = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "theta",
                 "k\u00e4se", "\u65e5\u672c", "a,b", 'say "hi"', " padded ",
                 "x" * 30, "ok"]
        rows, bad, note_missing = [], 0, False
        for i in range(1, nrows + 1):
            row = {}
            for f in fields:
                if f == "id":
                    row[f] = i
                elif f == "n1":
                    row[f] = r.randint(0, 999)
                elif f == "n2":
                    row[f] = r.randint(-50, 50)
                elif f == "k":
                    row[f] = r.randint(0, 3)
                elif f == "s1":
                    row[f] = " ".join(r.choice(words) for _ in range(r.randint(1, 3)))
                elif f == "grp":
                    row[f] = "g%d" % r.randint(0, 3)
                elif f == "note":
                    x = r.random()
                    if x < 0.2:
                        row[f] = None
                    elif x < 0.3 and kind != "csv":
                        note_missing = True
                        continue   # absent: str? allows it
                    else:
                        row[f] = r.choice(words) * r.randint(1, 3)
                elif f == "f1":
                    row[f] = round(r.uniform(-100, 100), r.randint(0, 3))
                elif types[f] == ARR:
                    arr = [r.randint(0, 99) for _ in range(r.choice([0, 1, 1, 2, 2, 3]))]
                    x = r.random()
                    if x < 0.05:
                        row[f] = r.choice(["oops", "{}", "[1,", '{"a": 1}'])
                    elif real_arrays and x < 0.7:
                        row[f] = arr
                    else:
                        row[f] = json.dumps(arr)
            if mode == "flexible" and kind != "csv" and r.random() < 0.1:
                row["extra"] = r.randint(0, 9)
            line = None
            if bad_rate and r.random() < bad_rate:
                bad += 1
                how = r.randrange(4)
                if kind == "csv":
                    if how == 0:
                        row["n1"] = "x%d" % i
                    elif how == 1:
                        row["id"] = ""
                    else:
                        line = [str(i), "1"]  # too few fields
                elif mode == "observed":
                    line = r.choice(["not json %d" % i, "[%d]" % i, '"%d"' % i])
                else:
                    if how == 0:
                        row["n1"] = "n%d" % i
                    elif how == 1:
                        del row["id"]
                    elif how == 2:
                        row["n1"] = float(i) + 0.5
                    else:
                        line = r.choice(["[%d]" % i, "%d" % i])
                        if kind == "jsonl" and r.random() < 0.5:
                            line = "{broken %d" % i
            rows.append(line if line is not None else row)

        opts = {}
        path = os.path.join(self.outdir, "input." + {"csv": "csv", "jsonl": "jsonl", "json": "json"}[kind])
        if kind == "csv":
            with open(path, "w", newline="", encoding="utf-8") as fp:
                w = csv.writer(fp, lineterminator="\n")
                w.writerow(fields)
                for row in rows:
                    if isinstance(row, list):
                        w.writerow(row)
                        continue
                    w.writerow(["" if row.get(f) is None else
                                (json.dumps(row[f]) if isinstance(row[f], list) else row[f])
                                for f in fields])
            src = {"plugin": "csv", "options": opts}
        else:
            with open(path, "w", encoding="utf-8") as fp:
                if kind == "jsonl":
                    for row in rows:
                        fp.write((row if isinstance(row, str) else
                                  json.dumps(row, ensure_ascii=False)) + "\n")
                else:
                    # A JSON array file cannot hold a broken line: its
                    # invalid rows are elements that are not objects.
                    items = [json.loads(x) if isinstance(x, str) and x[:1] in "[0123456789"
                             else (x if not isinstance(x, str) else [x]) for x in rows]
                    data = {"rows": items} if r.random() < 0.5 else items
                    json.dump(data, fp, ensure_ascii=False, indent=r.choice([None, 1]))
                    if isinstance(data, dict):
                        opts["data_key"] = "rows"
            src = {"plugin": "json", "options": opts}
            opts["format"] = kind
        opts["path"] = os.path.basename(path)   # run from OUTDIR
        opts["schema"] = schema
        if r.random() < 0.75:
            self.quarantine = self.new_json_sink("quarantine")
            opts["on_validation_failure"] = self.quarantine
        else:
            opts["on_validation_failure"] = "discard"

        shape = Shape()
        for f in fields:
            t = types[f]
            if f == "note":
                shape.fields[f] = F(STR, present=not note_missing, nonnull=False)
            else:
                shape.fields[f] = F(t)
        shape.extras = mode == "flexible" and kind != "csv"
        self.stats.update(source=kind, rows=nrows, bad=bad, mode=mode)
        return src, shape

    # ------------------------------------------------------- conditions
    def atom(self, shape):
        r = self.rng
        ints = shape.leaves(lambda f: f.sure() and f.typ == INT)
        strs = shape.leaves(lambda f: f.sure() and f.typ == STR)
        floats = shape.leaves(lambda f: f.sure() and f.typ == FLOAT)
        opt = shape.top(lambda f: not f.sure() and f.typ in (INT, STR, FLOAT))
        choices = []
        if ints:
            choices += ["int"] * 4
        if strs:
            choices += ["str"] * 2
        if floats:
            choices += ["float"]
        if opt:
            choices += ["opt"]
        if not choices:
            return r.choice(["True", "False", "1 + 1 == 2"])
        c = r.choice(choices)
        if c == "int":
            p, _ = r.choice(ints)
            x = ref(p)
            return r.choice([
                "%s > %d" % (x, r.randint(-10, 600)),
                "%s %% %d == %d" % (x, r.randint(2, 5), r.randint(0, 1)),
                "%s in [%s]" % (x, ", ".join(str(r.randint(0, 9)) for _ in range(3))),
                "abs(%s - %d) < %d" % (x, r.randint(0, 500), r.randint(1, 300)),
                "%s // %d <= %d" % (x, r.randint(1, 7), r.randint(0, 50)),
                "str(%s) != '7'" % x,
            ])
        if c == "str":
            p, _ = r.choice(strs)
            x = ref(p)
            return r.choice([
                "%s == 'g1'" % x,
                "%s in ['g0', 'g2', 'alpha']" % x,
                "len(%s) > %d" % (x, r.randint(1, 12)),
                "%s < 'g'" % x,
                "%s != ''" % x,
            ])
        if c == "float":
            p, _ = r.choice(floats)
            return "%s >= %s" % (ref(p), r.choice(["0", "0.5", "-12.25", "50"]))
        name = r.choice(opt)
        return r.choice([
            "row.get(%s) is None" % q(name),
            "row.get(%s) is not None" % q(name),
            "row.get(%s, 'zz') == 'zz'" % q(name),
        ])

    def condition(self, shape):
        r = self.rng
        c = self.atom(shape)
        x = r.random()
        if x < 0.25:
            c = "%s and %s" % (c, self.atom(shape))
        elif x < 0.45:
            c = "%s or not (%s)" % (c, self.atom(shape))
        elif x < 0.5:
            c = "not (%s)" % c
        elif x < 0.55:
            c = "(True if %s else False)" % c
        return c

    # -------------------------------------------------------- transforms
    def simple_transform(self, inp, shape):
        """A 1:1 transform. Returns (node, out_shape, can_error)."""
        r = self.rng
        kinds = ["passthrough", "field_mapper", "truncate", "delay", "delay"]
        kind = r.choice(kinds)
        name = self.uid("t")
        node = {"name": name, "plugin": kind, "input": inp}
        out = shape.copy()
        can_error = False
        if kind == "passthrough":
            node["options"] = {} if r.random() < 0.5 else {"validate_input": False}
        elif kind == "delay":
            opts = {"distribution": "uniform", "min_ms": 0, "max_ms": 3,
                    "seed": r.randint(0, 10 ** 6)}
            if shape.unique and r.random() < 0.5:
                opts["error_rate"] = 0.2
            node["options"] = opts
        elif kind == "truncate":
            strs = out.top(lambda f: f.typ == STR)
            flds = {}
            for f in r.sample(strs, min(len(strs), r.randint(1, 2))):
                flds[f] = r.randint(1, 12)
            if not flds or r.random() < 0.15:
                flds["zz_missing"] = r.randint(1, 5)
            strict = r.random() < 0.4
            opts = {"fields": flds, "suffix": r.choice(["", "~", "...", "\u2026"])}
            if strict or r.random() < 0.3:
                opts["strict"] = strict
            node["options"] = opts
            if strict and any(not (f in out.fields and out.fields[f].sure()
                                   and out.fields[f].typ == STR) for f in flds):
                can_error = True
        else:  # field_mapper
            cands = list(out.fields)
            nested = [".".join(p) for p, f in out.leaves(lambda f: True) if len(p) > 1]
            if not cands and not nested:
                node["plugin"] = "passthrough"
                node["options"] = {}
                return node, out, False
            srcs = r.sample(cands, min(len(cands), r.randint(1, 3)))
            if nested and r.random() < 0.6:
                srcs.append(r.choice(nested))
            select_only = r.random() < 0.3
            strict = r.random() < 0.3
            mapping = {}
            for s in srcs:
                if s not in mapping:
                    mapping[s] = "%s_%s" % (self.uid("m"), s.split(".")[-1])
            opts = {"mapping": mapping}
            if select_only:
                opts["select_only"] = True
            if strict or r.random() < 0.2:
                opts["strict"] = strict
            node["options"] = opts
            new = {}
            if not select_only:
                for fname, f in out.fields.items():
                    if fname in mapping:
                        new[mapping[fname]] = f
                    else:
                        new[fname] = f
            for s, t in mapping.items():
                f = self.lookup(shape, s)
                if strict and not (f and f.present):
                    can_error = True
                if select_only or "." in s:
                    nf = f.copy() if f else F(INT, present=False, nonnull=False)
                    if not strict and not (f and f.present):
                        nf.present = False
                    new[t] = nf
            out.fields = new
            if select_only:
                out.extras = False
                out.unique = False
        return node, out, can_error

    def lookup(self, shape, dotted):
        """The field a field_mapper source names (top level first)."""
        if dotted in shape.fields:
            return shape.fields[dotted]
        parts, s, f = dotted.split("."), shape, None
        for i, p in enumerate(parts):
            if s is None or p not in s.fields:
                return None
            f = s.fields[p]
            if i < len(parts) - 1:
                if f.typ != OBJ or not f.sure():
                    return None
                s = f.sub
        return f

    def explode(self, inp, shape):
        r = self.rng
        arrs = shape.top(lambda f: f.typ == ARR)
        af = r.choice(arrs)
        name = self.uid("x")
        opts = {"array_field": af}
        out = shape.copy()
        if r.random() < 0.5:
            opts["output_field"] = "%s_%s" % (self.uid("e"), af)
        of = opts.get("output_field", af)
        inc = "item_index" not in shape.fields and r.random() < 0.75
        if not inc or r.random() < 0.3:
            opts["include_index"] = inc
        new = {}
        for k, f in out.fields.items():
            if k == af:
                if of == af:
                    new[af] = F(INT)
            else:
                new[k] = f
        if of != af:
            new[of] = F(INT)
        if inc:
            new["item_index"] = F(INT)
        out.fields = new
        out.unique = shape.unique and inc
        node = {"name": name, "plugin": "json_explode", "input": inp, "options": opts}
        return node, out

    # ------------------------------------------------------ aggregations
    def aggregation(self, inp, shape):
        r = self.rng
        name = self.uid("agg")
        mode = r.choice(["transform", "passthrough"])
        trig = {}
        x = r.random()
        if x < 0.8:
            trig["count"] = r.randint(1, 9)
        if x > 0.65:
            trig["condition"] = "row['batch_count'] >= %d" % r.randint(1, 9)
        node = {"name": name, "input": inp, "trigger": trig}
        if r.random() < 0.7 or mode == "passthrough":
            node["output_mode"] = mode
        out = shape.copy()
        ints = shape.top(lambda f: f.typ == INT)
        if ints and r.random() < 0.6:
            node["plugin"] = "batch_stats"
            vf = r.choice(ints)
            strs = shape.top(lambda f: f.typ == STR)
            if strs and r.random() < 0.05:
                vf = r.choice(strs)   # text values: every batch fails (on_error)
            opts = {"value_field": vf}
            groups = shape.top(lambda f: f.present and f.typ in (INT, STR))
            groups = [g for g in groups if g not in FIGURES]
            gb = None
            if groups and r.random() < 0.5:
                gb = r.choice(groups)
                opts["group_by"] = gb
            mean = r.random() < 0.5
            if mean or r.random() < 0.3:
                opts["compute_mean"] = mean
            node["options"] = opts
            vsure = shape.fields[vf].sure() and shape.fields[vf].typ == INT
            if mode == "transform":
                f = {}
                f["count"] = F(INT)
                f["sum"] = F(INT, nonnull=vsure)
                f["batch_size"] = F(INT)
                if mean:
                    f["mean"] = F(FLOAT, nonnull=vsure)
                if gb:
                    f[gb] = F(shape.fields[gb].typ, nonnull=shape.fields[gb].nonnull)
                out = Shape(f, extras=False, unique=False)
            else:
                # A member already holding batch_* fails the batch (on_error).
                for a in STATS_ADDED:
                    if a == "batch_mean" and not mean:
                        continue
                    t = FLOAT if a == "batch_mean" else INT
                    out.fields[a] = F(t, nonnull=vsure or a in ("batch_count", "batch_size"))
        else:
            node["plugin"] = "batch_replicate"
            opts = {}
            info = not any(a in shape.fields for a in ("batch_size", "batch_index"))
            cidx = "copy_index" not in shape.fields and r.random() < 0.5
            # attach_batch_info defaults to false, include_copy_index to true.
            if info or r.random() < 0.3:
                opts["attach_batch_info"] = info
            if not cidx or r.random() < 0.3:
                opts["include_copy_index"] = cidx
            if mode == "transform":
                if "k" in shape.fields and shape.fields["k"].typ == INT and r.random() < 0.5:
                    opts["copies_field"] = "k"
                if r.random() < 0.5:
                    opts["default_copies"] = r.randint(0, 3)
            node["options"] = opts
            if info:
                out.fields["batch_size"] = F(INT)
                out.fields["batch_index"] = F(INT)
            if cidx:
                out.fields["copy_index"] = F(INT)
            out.unique = False
        if mode == "passthrough" and node["plugin"] == "batch_stats":
            out.unique = shape.unique
        return node, out

    # ----------------------------------------------------------- the DAG
    def dest(self, shape, depth):
        """A destination for rows of `shape`: a sink name, or a new
        connection whose consumer (and everything after it) is generated."""
        r = self.rng
        if self.budget <= 0 or depth > 6 or (depth and r.random() < 0.12):
            return self.sink_for(shape)
        self.budget -= 1
        choices = ["transform"] * 4 + ["gate"] * 2 + ["fork"] * 3 + ["agg"] * 2
        if shape.top(lambda f: f.typ == ARR):
            choices += ["explode"] * 2
        kind = r.choice(choices)
        conn = self.uid("c")
        if kind == "transform":
            node, out, can_error = self.simple_transform(conn, shape)
            self.transforms.append(node)
            self.note(node["plugin"])
            node["on_success"] = self.dest(out, depth + 1)
            if can_error or r.random() < 0.3:
                node["on_error"] = self.error_dest()
        elif kind == "explode":
            node, out = self.explode(conn, shape)
            self.transforms.append(node)
            self.note("json_explode")
            node["on_success"] = self.dest(out, depth + 1)
            node["on_error"] = self.error_dest()
        elif kind == "agg":
            node, out = self.aggregation(conn, shape)
            self.aggs.append(node)
            self.note(node["plugin"] + "/" + node.get("output_mode", "transform"))
            node["on_success"] = self.dest(out, depth + 1)
            node["on_error"] = self.error_dest()
        elif kind == "gate":
            name = self.uid("g")
            node = {"name": name, "input": conn, "condition": self.condition(shape)}
            self.gates.append(node)
            self.note("gate")
            routes = {"true": self.dest(shape, depth + 1),
                      "false": self.dest(shape, depth + 1)}
            node["routes"] = routes
        else:
            self.fork(conn, shape, depth)
        return conn

    def fork(self, conn, shape, depth):
        r = self.rng
        name = self.uid("f")
        node = {"name": name, "input": conn}
        self.gates.append(node)
        nb = r.choice([2, 2, 2, 3, 3, 4])
        everyone = r.random() < 0.35
        node["condition"] = "True" if everyone and r.random() < 0.5 else self.condition(shape)
        routes = {"true": "fork"}
        if everyone:
            routes["false"] = "fork"
        joined = r.random() < 0.65
        self.note("fork+coalesce" if joined else "fork")
        if joined:
            branches = [self.uid("b") for _ in range(nb)]
            node["fork_to"] = branches
            ends = []
            for b in branches:
                ends.append(self.joined_branch(b, shape.copy(), depth))
            routes_false = None if everyone else self.dest(shape, depth + 1)
            self.make_coalesce(self.uid("j"), branches, ends, depth)
            if routes_false is not None:
                routes["false"] = routes_false
        else:
            fork_to = []
            for _ in range(nb):
                d = self.dest(shape.copy(), depth + 1)
                while d in fork_to:   # a reused sink: take a fresh one
                    d = self.new_json_sink()
                    self.sink_producers[d] += 1
                fork_to.append(d)
            node["fork_to"] = fork_to
            if not everyone:
                routes["false"] = self.dest(shape, depth + 1)
        node["routes"] = routes

    def joined_branch(self, first, shape, depth):
        """Nodes from connection `first` to the connection a coalesce takes
        (1:1 transforms, gates sending some rows away, nested forks joined
        again). Returns (last_conn, shape, always_arrives)."""
        r = self.rng
        cur, always = first, True
        for _ in range(r.choice([0, 0, 1, 1, 2, 3])):
            x = r.random()
            nxt = self.uid("c")
            if x < 0.6:
                node, out, can_error = self.simple_transform(cur, shape)
                node["on_success"] = nxt
                self.note(node["plugin"])
                if can_error or r.random() < 0.3:
                    node["on_error"] = self.error_dest()
                    if can_error:
                        always = False
                self.transforms.append(node)
                shape = out
            elif x < 0.85 or depth > 3:
                name = self.uid("g")
                away = self.sink_for(shape) if r.random() < 0.7 else self.error_dest_sink()
                on = r.choice(["true", "false"])
                node = {"name": name, "input": cur, "condition": self.condition(shape),
                        "routes": {on: nxt, ("false" if on == "true" else "true"): away}}
                self.gates.append(node)
                self.note("gate")
                always = False
            else:
                # A nested fork, joined again inside this branch.
                fname = self.uid("f")
                nb = r.choice([2, 3])
                branches = [self.uid("b") for _ in range(nb)]
                node = {"name": fname, "input": cur, "condition": "True",
                        "routes": {"true": "fork"}, "fork_to": branches}
                if r.random() < 0.5:
                    node["condition"] = self.condition(shape)
                    node["routes"]["false"] = "fork" if r.random() < 0.5 else self.sink_for(shape)
                    if node["routes"]["false"] != "fork":
                        always = False
                self.gates.append(node)
                self.note("nested fork+coalesce")
                ends = [self.joined_branch(b, shape.copy(), depth + 2) for b in branches]
                cname = self.uid("j")
                shape, inner_always = self.make_coalesce(cname, branches, ends, depth + 2,
                                                         on_success=nxt)
                always = always and inner_always
            cur = nxt
        return cur, shape, always

    def error_dest_sink(self):
        d = self.error_dest()
        return d if d != "discard" else self.sink_for(Shape(extras=True))

    def make_coalesce(self, cname, branches, ends, depth, on_success=None):
        """A coalesce joining `branches` (ends[i] = (conn, shape, always)).
        With on_success=None the merged rows continue via dest(); returns
        (merged shape, merged rows always produced)."""
        r = self.rng
        nb = len(branches)
        policy = r.choice(["require_all", "quorum", "best_effort", "first"])
        merge = r.choice(["union", "union", "nested", "select"])
        node = {"name": cname}
        # Declared branch order may differ from fork_to order.
        order = list(range(nb))
        if r.random() < 0.4:
            r.shuffle(order)
        if all(ends[i][0] == branches[i] for i in order) and r.random() < 0.5:
            node["branches"] = [branches[i] for i in order]
        else:
            node["branches"] = {branches[i]: ends[i][0] for i in order}
        node["policy"] = policy
        if policy == "quorum":
            node["quorum_count"] = r.randint(1, nb)
        if policy == "best_effort":
            node["timeout_seconds"] = 10
        node["merge"] = merge
        sel = None
        if merge == "select":
            sel = r.randrange(nb)
            node["select_branch"] = branches[sel]
        self.coalesce.append(node)

        all_always = all(e[2] for e in ends)
        # Which branches a merged row holds.
        if policy == "first":
            if all_always:
                taken = {0}          # the first fork_to branch arrives first
                exact = True
            else:
                taken, exact = set(range(nb)), False
        else:
            taken = set(range(nb))
            exact = all_always or policy == "require_all"
        shp = Shape(unique=all(ends[i][1].unique for i in range(nb)))
        if merge == "select":
            # (policy first with select_branch not the first to arrive
            # fails every join: no rows, which is fine.)
            shp = ends[sel][1].copy()
        elif merge == "nested":
            for i in order:
                if i in taken:
                    shp.fields[branches[i]] = F(OBJ, present=exact, sub=ends[i][1].copy())
        else:
            for i in order:
                if i not in taken:
                    continue
                for k, f in ends[i][1].fields.items():
                    g = f.copy()
                    if not exact:
                        g.present = False
                    if k in shp.fields:
                        old = shp.fields[k]
                        # the later branch wins; a collision of types is "unknown"
                        if old.typ != g.typ:
                            g.typ = "any"
                        g.present = g.present or old.present
                        g.nonnull = g.nonnull and old.nonnull
                    shp.fields[k] = g
                shp.extras = shp.extras or ends[i][1].extras
        if on_success is None:
            node["on_success"] = self.dest(shp, depth + 1)
        else:
            node["on_success"] = on_success
        always = all_always and (policy != "first" or merge != "select" or sel == 0)
        return shp, always

    # ------------------------------------------------------------ output
    def build(self):
        r = self.rng
        os.makedirs(self.outdir, exist_ok=True)
        src, shape = self.make_source()
        src["on_success"] = self.dest(shape, 0)
        lines = ["# Generated by tests/integration/property_gen.py %d DIR. Run it from DIR:"
                 % self.seed,
                 "#   ELSPETH_OUT_DIR=out elspeth run -s settings.yaml --execute --sequential"]
        lines.append("source:")
        lines.append("  plugin: %s" % src["plugin"])
        lines.append("  on_success: %s" % src["on_success"])
        lines.append("  options: %s" % json.dumps(src["options"], ensure_ascii=False))
        for key, items in (("transforms", self.transforms), ("gates", self.gates),
                           ("coalesce", self.coalesce), ("aggregations", self.aggs)):
            if not items:
                continue
            # Sections list their nodes in a shuffled order: wiring is by name.
            items = list(items)
            r.shuffle(items)
            lines.append("%s:" % key)
            for it in items:
                lines.append("  - %s" % json.dumps(it, ensure_ascii=False))
        lines.append("sinks:")
        for k, v in self.sinks.items():
            lines.append("  %s: %s" % (k, json.dumps(v, ensure_ascii=False)))
        lines.append("retry: {max_attempts: 3, initial_delay_seconds: 0.001, "
                     "max_delay_seconds: 0.01}")
        if r.random() < 0.3:
            m = r.choice([1, 2, 4, 8, 16])
            w = m * r.choice([1, 1, 2, 3])
            lines.append("concurrency: {pipelining: {enabled: true, "
                         "max_rows_in_flight: %d, max_completed_waiting: %d}}" % (m, w))
        with open(os.path.join(self.outdir, "settings.yaml"), "w", encoding="utf-8") as fp:
            fp.write("\n".join(lines) + "\n")
        self.stats.update(seed=self.seed, transforms=len(self.transforms),
                          gates=len(self.gates), coalesce=len(self.coalesce),
                          aggregations=len(self.aggs), sinks=len(self.sinks))
        with open(os.path.join(self.outdir, "case.json"), "w") as fp:
            json.dump(self.stats, fp, indent=1)
        # For shell scripts: the number of source records, and a summary.
        with open(os.path.join(self.outdir, "case.txt"), "w") as fp:
            fp.write("%d %s/%s, %d transforms, %d gates, %d coalesce, %d aggregations, "
                     "%d sinks\n" % (self.stats["rows"], self.stats["source"],
                                     self.stats["mode"], len(self.transforms),
                                     len(self.gates), len(self.coalesce),
                                     len(self.aggs), len(self.sinks)))


def main():
    a = sys.argv[1:]
    if len(a) == 4 and a[0] == "--many":
        # --many SEED0 COUNT BASEDIR: BASEDIR/case-SEED for each seed (one
        # interpreter start for a whole test run).
        for seed in range(int(a[1]), int(a[1]) + int(a[2])):
            Gen(seed, os.path.join(a[3], "case-%d" % seed)).build()
        return 0
    if len(a) != 2:
        sys.stderr.write("usage: property_gen.py SEED OUTDIR\n"
                         "       property_gen.py --many SEED0 COUNT BASEDIR\n")
        return 2
    Gen(int(a[0]), a[1]).build()
    return 0


if __name__ == "__main__":
    sys.exit(main())
