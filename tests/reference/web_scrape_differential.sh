#!/usr/bin/env bash
# By hand: our web_scrape extraction against ELSPETH 0.4.1's over random
# pages (web_scrape_differential.py). Builds a small driver against the
# build's libraries; exits 1 when a difference is not explained by a link
# nested in a link.
#   tests/reference/web_scrape_differential.sh HTML2TEXT_GIT_DIR [BUILD] [SEEDS] [N]
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
H2T_GIT=${1:?usage: web_scrape_differential.sh HTML2TEXT_GIT_DIR [BUILD] [SEEDS] [N]}
BUILD=$(realpath "${2:-$SRC/build}")
SEEDS=${3:-"1 2 3 4 5"} N=${4:-400}
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/lib"
git --git-dir="$H2T_GIT" archive 2025.4.15 html2text | tar -x -C "$WORK/lib"
printf '__version__ = "2025.4.15"\n__version_tuple__ = (2025, 4, 15)\n' > "$WORK/lib/html2text/_version.py"
cat > "$WORK/drv.c" <<'C'
/* JSON lines {"html": ...} in, {"markdown": ..., "text": ...} out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "plugins/transform/web_scrape_internal.h"
int main(void)
{
	static const char *const strip[] = { "script", "style" };
	char *line = NULL;
	size_t cap = 0;

	ws__html_init();
	while (getline(&line, &cap, stdin) > 0) {
		json_t *c = json_loads(line, 0, NULL), *o = json_object();
		const char *html = json_string_value(json_object_get(c, "html"));
		char *s;

		for (int f = 0; f < 2; f++) {
			core_buf b = { 0 };
			core_err e;
			int rc = ws__extract(html, strlen(html), f ? WS_FORMAT_TEXT : WS_FORMAT_MARKDOWN,
					     strip, 2, &b, &e);

			json_object_set_new(o, f ? "text" : "markdown",
					    rc ? json_string("ERROR") : json_stringn(b.data ? b.data : "", b.len));
			core_buf_release(&b);
		}
		s = json_dumps(o, JSON_COMPACT);
		puts(s);
		free(s);
		json_decref(o);
		json_decref(c);
	}
	free(line);
	return 0;
}
C
cc -std=gnu11 -I"$SRC" "$WORK/drv.c" "$BUILD/libelspeth_plugins.a" "$BUILD/libelspeth_core.a" \
  $(pkg-config --libs libxml-2.0 libcurl jansson yaml-0.1) -lcrypto -lm -lpthread -o "$WORK/drv"
rc=0
for s in $SEEDS; do
  SHOW=${SHOW:-2} python3 "$SRC/tests/reference/web_scrape_differential.py" "$WORK/drv" "$WORK/lib" "$s" "$N" || rc=1
done
exit $rc
