/*
 * load.c — settings into a validated pipeline (run.h): what `validate`
 * checks, for any caller that is about to start a job.
 */
#include "run/run.h"

static int built(int rc, core_settings **s, dag_graph **g, core_err *err)
{
	if (!rc && !(rc = dag_build(*s, g, err)))
		return 0;
	core_settings_free(*s);
	*s = NULL;
	return rc;
}

int run_load(const char *path, core_settings **s, dag_graph **g, core_err *err)
{
	*s = NULL;
	*g = NULL;
	return built(core_settings_load(path, s, err), s, g, err);
}

int run_load_text(const char *name, const char *yaml, core_settings **s, dag_graph **g,
		  core_err *err)
{
	*s = NULL;
	*g = NULL;
	return built(core_settings_parse(name, yaml, s, err), s, g, err);
}

int run_validate(const core_settings *s, dag_graph *g, core_err *err)
{
	int rc = dag_open(g, false, err);

	if (rc)
		return rc;
	dag_close(g, NULL);
	if ((rc = tel_check(&s->telemetry, err)))
		return rc;
	return run_check_dependencies(s, err);
}
