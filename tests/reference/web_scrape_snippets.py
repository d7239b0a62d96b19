#!/usr/bin/env python3
"""By hand: ELSPETH 0.4.1's own extract_content (BeautifulSoup + html2text
2025.4.15) over small HTML snippets, written as
tests/fixtures/web_scrape/snippets.json, which tests/unit/test_plugins_web_scrape.c
checks our extraction against.

    python3 tests/reference/web_scrape_snippets.py HTML2TEXT_LIB [ELSPETH_SRC] > tests/fixtures/web_scrape/snippets.json

HTML2TEXT_LIB: a directory holding the html2text package of tag 2025.4.15
(web_scrape_vs_elspeth.sh shows how to extract it); ELSPETH_SRC: the
reference's src/ (default ~/.cache/elspeth-ref/src).
"""
import importlib.util
import json
import os
import sys

lib = sys.argv[1]
ref = sys.argv[2] if len(sys.argv) > 2 else os.path.expanduser("~/.cache/elspeth-ref/src")
sys.path[:0] = [lib]
sys.path.append("/usr/lib/python3/dist-packages")  # Debian's bs4
spec = importlib.util.spec_from_file_location(
    "ex", os.path.join(ref, "elspeth/plugins/transforms/web_scrape_extraction.py"))
ex = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ex)
snips = [
 "<html><body><h1>Title</h1><p>Content here</p></body></html>",
 "<p>a<b>b</b>c</p>",
 "<p>x<em>y</em>z</p>",
 "<p><em>lead</em> text</p>",
 "<p>1. not a list</p>",
 "<p>- dash</p><p>+ plus</p><p>-- two</p>",
 "<p>back\\slash\\* and \\q</p>",
 "<ul><li>a</li><li>b<ol><li>c</li><li>d</li></ol></li></ul>",
 "<ol start=\"3\"><li>x</li><li>y</li></ol>",
 "<ol start=\"zz\"><li>x</li></ol>",
 "<pre>  keep\n   spaces</pre>",
 "<blockquote>one<blockquote>two</blockquote></blockquote>",
 "<p>a<br>b<br/>c</p>",
 "<hr><p>after rule</p>",
 "<a href=\"http://x.org/\">http://x.org/</a>",
 "<a href=\"http://x.org/\">other text</a>",
 "<a href=\"/p\" title=\"T\">t</a>",
 "<a href=\"#frag\">skip</a>",
 "<img src=\"/i.png\" alt=\"A\">",
 "<img alt=\"no src\">",
 "<table><tr><th>h1</th><th>h2</th></tr><tr><td>a</td><td>b</td></tr></table>",
 "<p>&amp; &lt;tag&gt; &quot;q&quot; &nbsp;x</p>",
 "<p>   lots    of\n\n whitespace   </p>",
 "<script>var x;</script><style>p{}</style><p>visible</p>",
 "<div>a</div><div>b</div>",
 "<code>*x*</code> and <kbd>_y_</kbd>",
 "<h2>Sub <em>em</em></h2>",
 "<dl><dt>T</dt><dd>D</dd></dl>",
 "<p>x<strong></strong>y</p>",
 "<p>**<b>b</b></p>",
 "<p>~<del>d</del></p>",
 "<p>caf\u00e9 \u2014 \u65e5\u672c</p>",
 "",
 "   ",
 "plain text only",
 "<title>T</title><p>body</p>",
 "<p>a<!-- c -->b</p>",
 "<p>x<span>y</span>z</p>",
 "<ul><li><p>para</p></li></ul>",
 "<p><q>q1</q> <q>q2</q></p>",
 "<abbr title=\"World Wide Web\">WWW</abbr>",
 # BeautifulSoup shortens whitespace-only strings (but in pre and textarea)
 "<code><abbr title=\"E\">\n </abbr>x</code>",
 "<p><b>a</b>   <i>b</i>\n\t<u>c</u></p>",
 "<pre><b>x</b>   \n  <i>y</i></pre>",
 "<textarea>  \n  </textarea><p>after</p>",
 # found by a differential run against ELSPETH (random pages)
 "<dl><dt>a_b </dt><dd>+ plus </dd></dl><q>  sp  </q><q>tail.</q>",
 "<h1>\u00a0nb\u00a0 a_b </h1><blockquote>(p)  <a href=\"http://e.org/\">- dash</a></blockquote>",
 "<ol><li>&amp; <p>&lt;x&gt;&amp;</p></li><li><img src=\"/i2.png\" alt=\"a [b]\">&amp;  </li></ol>",
]
strip = [["script","style"]]
out = []
for s in snips:
    out.append({"html": s, "markdown": ex.extract_content(s, "markdown", ["script","style"]),
                "text": ex.extract_content(s, "text", ["script","style"])})
out.append({"html": "<nav>N</nav><main><p>M</p></main><footer>F</footer>", "strip": ["nav","footer"],
            "markdown": ex.extract_content("<nav>N</nav><main><p>M</p></main><footer>F</footer>", "markdown", ["nav","footer"]),
            "text": ex.extract_content("<nav>N</nav><main><p>M</p></main><footer>F</footer>", "text", ["nav","footer"])})
out.append({"html": "a<script>x</script>- b", "strip": ["script"],
            "markdown": ex.extract_content("a<script>x</script>- b", "markdown", ["script"]),
            "text": ex.extract_content("a<script>x</script>- b", "text", ["script"])})
print(json.dumps(out, ensure_ascii=False, indent=1))
