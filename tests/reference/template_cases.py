#!/usr/bin/env python3
"""Render prompt-template cases with Jinja2 as ELSPETH 0.4.1 does.

    python3 tests/reference/template_cases.py > tests/fixtures/jinja_template_cases.json

ELSPETH renders prompts with jinja2.sandbox.ImmutableSandboxedEnvironment
(undefined=StrictUndefined, autoescape=False) and the context
{"row": row, "lookup": lookup or {}} (plugins/infrastructure/templates.py,
plugins/transforms/llm/templates.py), the row being a PipelineRow
(contracts/schema_contract.py): Row below behaves as one does for a row
with an observed schema (fields by item and by attribute, then its own
get, keys, to_dict and contract; `in`, iteration over the field names). Each case below is rendered that way
and recorded with Jinja's output, or with the kind of error it raised;
tests/unit/test_plugins_llm_template_jinja.c renders every case with our
engine and wants the same bytes (or an error). Nothing at test time needs
Python. The cases stay inside what docs/templates.md says we support.
"""
import json
import sys

import jinja2
from jinja2 import StrictUndefined
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROW = {
    "id": 7, "name": "Ada", "score": 0.75, "big": 10**16, "neg": -3,
    "active": True, "off": False, "none": None, "empty": "", "zero": 0,
    "tags": ["urgent", "billing", "vip"], "nums": [3, 1, 2], "nested": [[1, 2], [3, 4]],
    "pairs": [["a", 1], ["b", 2]],
    "customer": {"tier": "gold", "since": 2019, "notes": None},
    "text": "héllo wörld", "cat": "billing", "prio": "high",
    "status": "Pending", "amount": 1500, "ratio": 2.5,
    "Order Status": "pending", "items": [{"sku": "A-1", "qty": 2}, {"sku": "B-2", "qty": 1}],
    "uni": "日本語", "multi": "line one\nline two",
}

LOOKUP = {
    "categories": {
        "billing": {"name": "Billing & Payments", "team": "finance", "sla_hours": 24},
        "technical": {"name": "Technical Support", "team": "engineering", "sla_hours": 48},
    },
    "priorities": {"high": {"level": 1, "tone": "urgent"}, "low": {"level": 3, "tone": "calm"}},
    "labels": ["positive", "neutral", "negative"],
    "openers": {"positive": "Thanks!", "negative": "Sorry to hear that."},
    "scale": "1-10",
    "empty_list": [],
}

class Row:
    """A PipelineRow of an observed schema, as Jinja sees one."""

    __slots__ = ("_data",)

    def __init__(self, data):
        self._data = dict(data)

    def __getitem__(self, key):
        return self._data[key]

    def __getattr__(self, key):
        if key.startswith("_"):
            raise AttributeError(key)
        try:
            return self._data[key]
        except KeyError as e:
            raise AttributeError(key) from e

    def __contains__(self, key):
        return key in self._data

    def __iter__(self):
        return iter(self._data)

    def get(self, key, default=None):
        return self._data.get(key, default)

    def keys(self):
        return list(self._data)

    def to_dict(self):
        return dict(self._data)

    @property
    def contract(self):
        return None


CASES = [
    # if / elif / else
    ("if_true", "{% if row.active %}yes{% endif %}"),
    ("if_false", "{% if row.off %}yes{% endif %}|"),
    ("if_else", "{% if row.off %}yes{% else %}no{% endif %}"),
    ("if_elif", "{% if row.zero %}a{% elif row.empty %}b{% elif row.name %}c{% else %}d{% endif %}"),
    ("if_elif_else", "{% if row.zero %}a{% elif row.off %}b{% else %}d{% endif %}"),
    ("if_nested", "{% if row.active %}[{% if row.off %}x{% else %}y{% endif %}]{% endif %}"),
    ("if_none_is_falsy", "{% if row.none %}x{% else %}none{% endif %}"),
    ("if_list_truthy", "{% if row.tags %}tags{% endif %}{% if lookup.empty_list %}E{% endif %}"),
    ("if_compare_num", "{% if row.amount > 1000 %}big{% else %}small{% endif %}"),
    ("if_compare_float", "{% if row.score >= 0.75 %}ge{% endif %}{% if row.score < 0.5 %}lt{% endif %}"),
    ("if_eq_str", "{% if row['Order Status'] == \"pending\" %}P{% endif %}"),
    ("if_ne", "{% if row.status != 'Pending' %}A{% else %}B{% endif %}"),
    ("if_in_row", "{% if 'amount' in row %}has{% endif %}{% if 'nope' in row %}no{% endif %}"),
    ("if_not_in", "{% if 'gold' not in row.tags %}not{% endif %}"),
    ("if_in_str", "{% if 'wör' in row.text %}sub{% endif %}"),
    ("if_and_or", "{% if row.active and row.amount > 10 or row.off %}T{% endif %}"),
    ("if_not", "{% if not row.off %}T{% endif %}{% if not row.active %}F{% endif %}"),
    ("if_defined", "{% if row.missing is defined %}d{% else %}u{% endif %}{% if row.name is defined %}D{% endif %}"),
    ("if_undefined", "{% if row.missing is undefined %}u{% endif %}"),
    ("if_is_none", "{% if row.none is none %}N{% endif %}{% if row.zero is not none %}Z{% endif %}"),
    ("if_true_literal", "{% if True %}t{% endif %}{% if false %}f{% endif %}"),
    ("if_int_eq_float", "{{ row.id == 7.0 }} {{ row.active == 1 }} {{ row.off == 0 }}"),
    ("if_list_eq", "{{ row.nums == [3, 1, 2] }} {{ row.nums != [1] }}"),
    ("cmp_strings", "{{ 'abc' < 'abd' }} {{ row.uni > row.text }}"),
    ("cmp_lists", "{{ row.nums < [3, 2] }}"),
    # for
    ("for_list", "{% for t in row.tags %}<{{ t }}>{% endfor %}"),
    ("for_loop_attrs", "{% for t in row.tags %}{{ loop.index }}/{{ loop.index0 }}/{{ loop.first }}/{{ loop.last }}/{{ loop.length }}/{{ loop.revindex }}/{{ loop.revindex0 }};{% endfor %}"),
    ("for_join", "{% for t in row.tags %}{{ t }}{% if not loop.last %}, {% endif %}{% endfor %}"),
    ("for_else_empty", "{% for x in lookup.empty_list %}x{% else %}none{% endfor %}"),
    ("for_else_full", "{% for x in row.nums %}{{ x }}{% else %}none{% endfor %}"),
    ("for_dict_keys", "{% for k in row.customer %}{{ k }};{% endfor %}"),
    ("for_items", "{% for k, v in row.customer.items() %}{{ k }}={{ v }};{% endfor %}"),
    ("for_keys_values", "{% for k in lookup.openers.keys() %}{{ k }}{% endfor %}|{% for v in lookup.openers.values() %}{{ v }}{% endfor %}"),
    ("for_string", "{% for ch in row.uni %}[{{ ch }}]{% endfor %}"),
    ("for_unpack_pairs", "{% for k, n in row.pairs %}{{ k }}{{ n }}{% endfor %}"),
    ("for_nested", "{% for r in row.nested %}{% for c in r %}{{ loop.index }}:{{ c }} {% endfor %}{{ loop.index }}|{% endfor %}"),
    ("for_objects", "{% for it in row.items %}{{ it.sku }} x{{ it['qty'] }}{% if not loop.last %}; {% endif %}{% endfor %}"),
    ("for_shadow_row", "{% for row in row.items %}{{ row.sku }}{% endfor %}"),
    ("for_outer_var", "{% for a in row.tags %}{% for b in row.nums %}{{ a[0] }}{{ b }}{% endfor %} {% endfor %}"),
    ("for_in_if", "{% if row.tags %}{% for t in row.tags %}{% if loop.first %}{{ t | upper }}{% else %}{{ t }}{% endif %} {% endfor %}{% endif %}"),
    ("for_filter_on_var", "{% for t in row.tags %}{{ t | length }}{% endfor %}"),
    ("for_loop_var_compare", "{% for n in row.nums %}{% if n > 1 %}{{ n }}{% endif %}{% endfor %}"),
    ("for_list_literal", "{% for x in ['a', 'b'] %}{{ x }}{% endfor %}{% for x in [] %}x{% else %}E{% endfor %}"),
    ("for_items_list_var", "{% for k, v in lookup.openers.items() %}{% if k == 'negative' %}{{ v }}{% endif %}{% endfor %}"),
    # whitespace
    ("ws_block_keeps_newlines", "A\n{% if row.active %}\nB\n{% endif %}\nC\n"),
    ("ws_strip_both", "A\n  {%- if row.active -%}  \n B \n {%- endif %}\nC"),
    ("ws_for_lines", "Labels:\n{% for l in lookup.labels %}\n- {{ l }}\n{% endfor %}\nend"),
    ("ws_for_lines_stripped", "Labels:\n{%- for l in lookup.labels %}\n- {{ l }}\n{%- endfor %}\nend"),
    ("ws_for_lines_stripped_after", "Labels:\n{% for l in lookup.labels -%}\n  - {{ l }}\n{% endfor -%}\n end"),
    ("ws_plus", "x {%+ if true %} y {% endif %}"),
    ("ws_expr_and_stmt", "a {{- row.name -}} b {%- if true -%} c {%- endif -%} d"),
    ("ws_comment_in_block", "{% if true %}{# note #}x{#- y -#} z{% endif %}"),
    ("ws_crlf", "line1\r\n{% if true %}line2\r\n{% endif %}line3\r\n"),
    ("ws_trailing_newline_after_endif", "{% if true %}x{% endif %}\n"),
    ("ws_indented_block", "Items:\n  {% for i in row.items %}\n  * {{ i.sku }}\n  {% endfor %}\nDone"),
    # lookups
    ("lookup_scalar", "Scale: {{ lookup.scale }}"),
    ("lookup_dynamic_key", "{{ lookup.categories[row.cat].name }} ({{ lookup.categories[row.cat]['team'] }}, {{ lookup.categories[row.cat].sla_hours }}h)"),
    ("lookup_two_dims", "{{ lookup.priorities[row.prio].level }} {{ lookup.priorities[row.prio].tone | upper }}"),
    ("lookup_loop_with_last", "Choose one: {% for label in lookup.labels %}{{ label }}{% if not loop.last %}, {% endif %}{% endfor %}"),
    ("lookup_items_loop", "{% for sentiment, opener in lookup.openers.items() %}\n   - If {{ sentiment }}: \"{{ opener }}\"\n{% endfor %}"),
    ("lookup_get", "{{ lookup.get('scale') }} {{ lookup.get('nope') }} {{ lookup.get('nope', 'dflt') }} {{ row.get('name', 'x') }}"),
    ("lookup_in", "{% if row.cat in lookup.categories %}known{% endif %}{% if 'x' in lookup.categories %}x{% endif %}"),
    ("lookup_index_var", "{{ row.tags[row.zero] }} {{ row.nested[1][0] }} {{ row.tags[-1] }}"),
    # expressions and values
    ("and_or_values", "{{ row.name or 'anon' }}|{{ row.empty or 'blank' }}|{{ row.zero and 'x' }}|{{ row.id and row.name }}"),
    ("not_values", "{{ not row.empty }} {{ not row.tags }} {{ not none }}"),
    ("tests_render", "{{ row.missing is defined }} {{ row.none is none }} {{ row.name is not none }} {{ row.tags | length is defined }}"),
    ("literals", "{{ 'a' 'b' }} {{ 42 }} {{ -7 }} {{ 2.5 }} {{ true }} {{ False }} {{ none }} {{ None }}"),
    ("parens", "{{ (row.active and row.off) or (row.id == 7) }}"),
    ("numbers", "{{ row.score }} {{ row.big }} {{ row.neg }} {{ row.ratio }} {{ 1e3 }}"),
    ("filters_mix", "{{ row.text | upper }} {{ row.tags | length }} {{ row.missing | default('n/a') }} {{ row.empty | default('e', true) }}"),
    ("default_expr", "{{ row.missing | default(row.name) }} {{ row.missing | default(lookup.scale) | upper }}"),
    ("unicode_text", "Ünïcødé {% if true %}✓{% endif %} {{ row.uni }}"),
    ("multiline_value", "{% for line in [row.multi] %}>{{ line }}<{% endfor %}"),
    ("cmp_in_list_literal", "{{ row.cat in ['billing', 'tech'] }} {{ 3 in row.nums }} {{ [1, 2] in row.nested }}"),
    # errors (Jinja raises; so must we)
    ("err_undefined_in_if", "{% if row.missing %}x{% endif %}"),
    ("err_undefined_output", "{{ lookup.categories[row.missing] }}"),
    ("err_lookup_missing_key", "{{ lookup.categories['nope'].name }}"),
    ("err_loop_over_int", "{% for x in row.id %}{{ x }}{% endfor %}"),
    ("err_loop_over_none", "{% for x in row.none %}{{ x }}{% endfor %}"),
    ("err_loop_over_missing", "{% for x in row.missing %}{{ x }}{% endfor %}"),
    ("err_unpack", "{% for a, b in row.nums %}{{ a }}{% endfor %}"),
    ("err_unpack_count", "{% for a, b in row.nested %}{% endfor %}{% for a, b, c in row.pairs %}{% endfor %}"),
    ("err_compare_types", "{{ row.name < 3 }}"),
    ("err_in_int", "{{ 1 in row.id }}"),
    ("err_and_undefined", "{{ row.active and row.missing }}"),
    ("err_not_undefined", "{{ not row.missing }}"),
    ("err_compare_undefined", "{{ row.missing == 1 }}"),
    ("err_items_on_list", "{% for k, v in row.tags.items() %}{% endfor %}"),
    ("err_dict_method_not_key", "{{ lookup.priorities.items }}{% for x in row.customer.keys %}{% endfor %}"),
    ("err_row_method_not_key", "{{ row.keys | length }}"),
    ("row_items_field", "{% for it in row.items %}{{ it.sku }}{% endfor %} {{ row['items'][0].qty }} {{ row.customer['tier'] is defined }}"),
    ("string_index", "{{ row.name[0] }}{{ row.uni[-1] }}{{ row.text[1] }} {% for t in row.tags %}{{ t[0] | upper }}{% endfor %}"),
    ("err_string_index_range", "{{ row.name[3] }}"),
]


def render(env, src):
    try:
        tpl = env.from_string(src)
    except jinja2.TemplateSyntaxError as e:
        return {"error": "syntax", "message": str(e)}
    try:
        return {"output": tpl.render(row=Row(ROW), lookup=LOOKUP)}
    except jinja2.UndefinedError as e:
        return {"error": "undefined", "message": str(e)}
    except Exception as e:  # TypeError, ValueError, SecurityError...
        return {"error": type(e).__name__, "message": str(e)}


def main():
    env = ImmutableSandboxedEnvironment(undefined=StrictUndefined, autoescape=False)
    cases = []
    names = set()
    for name, src in CASES:
        assert name not in names, name
        names.add(name)
        want_error = name.startswith("err_")
        got = render(env, src)
        if want_error != ("error" in got):
            sys.exit(f"{name}: expected {'an error' if want_error else 'output'}, Jinja gave {got}")
        cases.append(dict(name=name, template=src, **got))
    head = json.dumps({"jinja2": jinja2.__version__, "row": ROW, "lookup": LOOKUP},
                      ensure_ascii=False, sort_keys=False)
    print(head[:-1] + ', "cases": [')
    print(",\n".join(json.dumps(c, ensure_ascii=False) for c in cases))
    print("]}")


if __name__ == "__main__":
    main()
