/* libFuzzer harness: the settings loader and graph validation must reject
 * any input with an error, never crash or leak. */
#include <stdlib.h>
#include <string.h>

#include "dag/dag.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	core_settings *s = NULL;
	dag_graph *g = NULL;
	core_err err;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (core_settings_parse("fuzz.yaml", text, &s, &err) == 0 &&
	    dag_build(s, &g, &err) == 0)
		dag_free(g);
	core_settings_free(s);
	free(text);
	return 0;
}
