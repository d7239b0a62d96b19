#!/usr/bin/env python3
"""Expected prompts of tests/fixtures/template_files/, rendered as ELSPETH
0.4.1 renders them (test_llm.sh section 13 compares our run with them).

    python3 tests/reference/template_files.py > tests/fixtures/template_files/expected.json

As ELSPETH's config loader does (core/config.py, _expand_template_files):
the template and system prompt are read with Path.read_text(encoding=
"utf-8"), the lookup with yaml.safe_load; each CSV row (strings) is
rendered by Jinja2's ImmutableSandboxedEnvironment with StrictUndefined,
as {"row": row, "lookup": lookup}. Needs python3-jinja2 and python3-yaml;
the test itself does not.
"""
import csv
import hashlib
import json
import sys
from pathlib import Path

import yaml
from jinja2 import StrictUndefined
from jinja2.sandbox import ImmutableSandboxedEnvironment

here = Path(__file__).resolve().parent.parent / "fixtures" / "template_files"
template = (here / "classify.j2").read_text(encoding="utf-8")
system = (here / "system.txt").read_text(encoding="utf-8")
lookup = yaml.safe_load((here / "lookup.yaml").read_text(encoding="utf-8")) or {}
env = ImmutableSandboxedEnvironment(undefined=StrictUndefined, autoescape=False)
tpl = env.from_string(template)
with open(here / "tickets.csv", newline="", encoding="utf-8") as f:
    prompts = [tpl.render(row=row, lookup=lookup) for row in csv.DictReader(f)]
json.dump({"template_hash": "sha256:" + hashlib.sha256(template.encode()).hexdigest(),
           "system_prompt": system, "prompts": prompts},
          sys.stdout, ensure_ascii=False, indent=1)
print()
