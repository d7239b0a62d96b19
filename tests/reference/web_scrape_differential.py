"""By hand: a differential run of our extraction against ELSPETH 0.4.1's
own (extract_content: BeautifulSoup + html2text 2025.4.15) over random
pages. Run by web_scrape_differential.sh, which builds the driver:

    web_scrape_differential.py DRIVER HTML2TEXT_LIB SEED N

Prints the first differences (SHOW=k, FMTS="markdown text") and a count;
differences from links nested in links (HTML forbids them: libxml2
closes the outer one, BeautifulSoup nests them) are counted apart.
"""
import json, random, subprocess, sys, importlib.util, os
DRIVER, LIB = sys.argv[1], sys.argv[2]
sys.argv[1:] = sys.argv[3:]
sys.path[:0] = [LIB]
sys.path.append("/usr/lib/python3/dist-packages")
spec = importlib.util.spec_from_file_location("ex", os.path.join(os.environ.get("ELSPETH_REF", os.path.expanduser("~/.cache/elspeth-ref")), "src/elspeth/plugins/transforms/web_scrape_extraction.py"))
ex = importlib.util.module_from_spec(spec); spec.loader.exec_module(ex)
rnd = random.Random(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
N = int(sys.argv[2]) if len(sys.argv) > 2 else 500
block = ["p","div","h1","h2","h3","blockquote","pre","ul","ol","dl","table","section"]
inline = ["em","i","u","strong","b","del","s","code","kbd","a","span","q","abbr","img","br"]
words = ["alpha","beta","1. one","- dash","+ plus","a_b","x*y","[br]","(p)","\\\\*","#h","!bang","caf\u00e9","\u00a0nb\u00a0","  sp  ","\n","&amp;","&lt;x&gt;","\u2014","http://e.org/","tail."]
def text(): return rnd.choice(words) + rnd.choice(["", " ", "  "])
def inl(d):
    t = rnd.choice(inline)
    if t == "br": return "<br>"
    if t == "img": return f'<img src="/i{rnd.randint(0,9)}.png" alt="{rnd.choice(["", "alt", "a [b]"])}">'
    attrs = ""
    if t == "a":
        attrs = rnd.choice([' href="http://e.org/"', ' href="/x"', ' href="#in"', '', ' href="/t" title="T (t)"'])
    if t == "abbr": attrs = ' title="Expansion"'
    inner = "".join(text() if rnd.random() < 0.6 or d > 3 else inl(d+1) for _ in range(rnd.randint(0,3)))
    return f"<{t}{attrs}>{inner}</{t}>"
def blk(d):
    t = rnd.choice(block)
    if t in ("ul","ol"):
        st = f' start="{rnd.randint(0,5)}"' if t == "ol" and rnd.random() < 0.3 else ""
        return f"<{t}{st}>" + "".join("<li>" + "".join(inl(d+1) if rnd.random()<0.5 else text() for _ in range(rnd.randint(1,3))) + (blk(d+1) if d < 3 and rnd.random() < 0.3 else "") + "</li>" for _ in range(rnd.randint(1,3))) + f"</{t}>"
    if t == "dl":
        return "<dl>" + "".join(f"<dt>{text()}</dt><dd>{text()}</dd>" for _ in range(rnd.randint(1,2))) + "</dl>"
    if t == "table":
        return "<table>" + "".join("<tr>" + "".join(f"<{rnd.choice(['td','th'])}>{text()}</td>" for _ in range(rnd.randint(1,3))) + "</tr>" for _ in range(rnd.randint(1,3))) + "</table>"
    if t == "pre":
        return "<pre>" + "".join(text() for _ in range(rnd.randint(1,4))) + "</pre>"
    inner = "".join((inl(d+1) if rnd.random()<0.5 else text()) if (rnd.random() < 0.7 or d > 2 or t.startswith("h") or t=="p") else blk(d+1) for _ in range(rnd.randint(1,4)))
    return f"<{t}>{inner}</{t}>"
docs = []
for i in range(N):
    body = "".join(blk(0) if rnd.random() < 0.7 else inl(0) for _ in range(rnd.randint(1,5)))
    docs.append(rnd.choice([body, f"<html><body>{body}</body></html>", f"<!DOCTYPE html><html><head><title>T</title></head><body>{body}</body></html>"]))
p = subprocess.run([DRIVER], input="".join(json.dumps({"html": d}) + "\n" for d in docs), capture_output=True, text=True)
ours = [json.loads(l) for l in p.stdout.splitlines()]
bad = {"markdown": 0, "text": 0}
shown = 0
for d, o in zip(docs, ours):
    for f in os.environ.get("FMTS", "markdown text").split():
        try:
            want = ex.extract_content(d, f, ["script","style"])
        except Exception as e:
            want = "EXC " + repr(e)
        if want != o[f]:
            bad[f] += 1
            if shown < int(os.environ.get("SHOW", "3")):
                shown += 1
                print("HTML:", repr(d)); print(" want", repr(want)); print(" got ", repr(o[f]))
print(N, "docs; differ:", bad)
import re
def nested_a(h):
    depth = 0
    for m in re.finditer(r"<(/?)a[ >]", h):
        depth += -1 if m.group(1) else 1
        if depth > 1: return True
    return False
other = 0
for d, o in zip(docs, ours):
    for f in ("markdown", "text"):
        try: want = ex.extract_content(d, f, ["script","style"])
        except Exception as e: want = "EXC"
        if want != o[f] and not nested_a(d):
            other += 1
            print("NON-NESTED DIFF", repr(d)[:300]); print(" want", repr(want)[:300]); print(" got ", repr(o[f])[:300])
print("differences without a link nested in a link:", other)
sys.exit(1 if other else 0)
