/*
 * ELSPETH's file options (core/settings_files.c): template_file,
 * system_prompt_file and lookup_file read into the settings when they
 * load, relative to the settings file and inside its directory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "core/core.h"

TestSuite(settings_files, .timeout = 10);

static char dir[64];

static void setup_dir(void)
{
	strcpy(dir, "/tmp/elspeth-sf-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown_dir(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

static void put(const char *name, const char *text, size_t len)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	cr_assert_not_null(f, "%s", path);
	cr_assert_eq(fwrite(text, 1, len, f), len);
	fclose(f);
}

static void puts_file(const char *name, const char *text)
{
	put(name, text, strlen(text));
}

/* A settings file whose llm transform has the given option lines. */
static void settings(const char *name, const char *opts)
{
	char text[4096];

	snprintf(text, sizeof(text),
		 "source: {plugin: csv, on_success: t_in, options: {path: in.csv, "
		 "on_validation_failure: discard}}\n"
		 "transforms:\n"
		 "  - name: t\n"
		 "    plugin: llm\n"
		 "    input: t_in\n"
		 "    on_success: out\n"
		 "    options:\n"
		 "      model: m\n%s"
		 "sinks:\n"
		 "  out: {plugin: csv, options: {path: out.csv}}\n", opts);
	puts_file(name, text);
}

static core_settings *load_ok(const char *name)
{
	char path[256];
	core_settings *s = NULL;
	core_err err = { 0 };

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	cr_assert_eq(core_settings_load(path, &s, &err), 0, "%s", err.msg);
	return s;
}

static void load_err(const char *name, const char *needle)
{
	char path[256];
	core_settings *s = NULL;
	core_err err = { 0 };

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	cr_assert_neq(core_settings_load(path, &s, &err), 0, "%s loaded", name);
	cr_assert_null(s);
	cr_assert(strstr(err.msg, needle), "'%s' lacks '%s'", err.msg, needle);
}

static const char *opt(const core_settings *s, const char *key)
{
	const core_node *n = core_map_get(s->transforms[0].options, key);

	return n && n->kind == CORE_NODE_SCALAR ? n->value : NULL;
}

Test(settings_files, files_are_read_into_the_settings, .init = setup_dir,
     .fini = teardown_dir)
{
	core_settings *s;
	json_t *lk, *want;

	cr_assert_eq(mkdir(strcat(strcpy((char[256]){ 0 }, dir), "/prompts"), 0700), 0);
	puts_file("prompts/t.j2", "Hi {{ row.a }}\r\nbye\rend\n");
	puts_file("prompts/sys.txt", "Be brief.\r\n");
	puts_file("prompts/lk.yaml", "# a comment\ncats:\n  a: {name: A, n: 1}\n"
		  "labels: [x, y]\nenv: ${HOME}\nnothing: null\n");
	settings("p.yaml", "      template_file: prompts/t.j2\n"
		 "      system_prompt_file: ./prompts/sys.txt\n"
		 "      lookup_file: prompts/lk.yaml\n");
	s = load_ok("p.yaml");
	cr_expect_str_eq(opt(s, "template"), "Hi {{ row.a }}\nbye\nend\n",
			 "CR LF and CR read as LF, as Python's read_text does");
	cr_expect_str_eq(opt(s, "template_source"), "prompts/t.j2");
	cr_expect_str_eq(opt(s, "system_prompt"), "Be brief.\n");
	cr_expect_str_eq(opt(s, "system_prompt_source"), "./prompts/sys.txt");
	cr_expect_str_eq(opt(s, "lookup_source"), "prompts/lk.yaml");
	cr_expect_null(core_map_get(s->transforms[0].options, "template_file"));
	cr_expect_null(core_map_get(s->transforms[0].options, "lookup_file"));
	lk = core_node_to_json(core_map_get(s->transforms[0].options, "lookup"));
	want = json_loads("{\"cats\": {\"a\": {\"name\": \"A\", \"n\": 1}}, "
			  "\"labels\": [\"x\", \"y\"], \"env\": \"${HOME}\", "
			  "\"nothing\": null}", 0, NULL);
	cr_expect(json_equal(lk, want), "the lookup as written, ${VAR} not expanded");
	cr_expect(strstr(s->settings_json, "\"template\":\"Hi {{ row.a }}\\nbye\\nend\\n\""),
		  "the recorded settings hold the text: %s", s->settings_json);
	cr_expect(strstr(s->settings_json, "\"labels\":[\"x\",\"y\"]"),
		  "the recorded settings hold the lookup");
	cr_expect_null(strstr(s->settings_json, "template_file"));
	json_decref(lk);
	json_decref(want);
	core_settings_free(s);
}

Test(settings_files, a_changed_file_is_a_changed_config, .init = setup_dir,
     .fini = teardown_dir)
{
	core_settings *s;
	char h1[CORE_SHA256_HEX_LEN + 1];

	puts_file("t.j2", "one {{ row.a }}");
	settings("p.yaml", "      template_file: t.j2\n");
	s = load_ok("p.yaml");
	strcpy(h1, s->config_hash);
	core_settings_free(s);
	puts_file("t.j2", "two {{ row.a }}");
	s = load_ok("p.yaml");
	cr_expect_str_neq(s->config_hash, h1);
	core_settings_free(s);
}

Test(settings_files, empty_lookup_and_aggregations, .init = setup_dir,
     .fini = teardown_dir)
{
	char text[1024];
	core_settings *s;
	const core_node *lk;

	puts_file("empty.yaml", "# nothing here\n");
	puts_file("t.j2", "x");
	snprintf(text, sizeof(text),
		 "source: {plugin: csv, on_success: a_in, options: {path: in.csv, "
		 "on_validation_failure: discard}}\n"
		 "aggregations:\n"
		 "  - name: a\n"
		 "    plugin: batch_stats\n"
		 "    input: a_in\n"
		 "    on_success: out\n"
		 "    trigger: {count: 2}\n"
		 "    options: {value_field: v, template_file: t.j2, lookup_file: empty.yaml}\n"
		 "sinks:\n"
		 "  out: {plugin: csv, options: {path: out.csv}}\n");
	puts_file("agg.yaml", text);
	s = load_ok("agg.yaml");
	lk = core_map_get(s->aggregations[0].options, "lookup");
	cr_assert_not_null(lk);
	cr_expect_eq(lk->kind, CORE_NODE_MAP);
	cr_expect_eq(lk->len, 0, "an empty lookup file is an empty mapping");
	cr_expect_str_eq(core_map_get(s->aggregations[0].options, "template")->value, "x");
	core_settings_free(s);
}

Test(settings_files, errors_name_the_option, .init = setup_dir,
     .fini = teardown_dir)
{
	char link[256];

	puts_file("t.j2", "x");
	puts_file("list.yaml", "- a\n- b\n");
	puts_file("bad.yaml", "a: [1, 2\n");
	put("latin1.j2", "caf\xe9", 4);
	put("nul.j2", "a\0b", 3);
	settings("both.yaml", "      template: inline\n      template_file: t.j2\n");
	load_err("both.yaml", "cannot specify both 'template' and 'template_file'");
	settings("missing.yaml", "      template_file: nope.j2\n");
	load_err("missing.yaml", "transforms[0].options.template_file: template file not found: ");
	settings("up.yaml", "      template_file: ../t.j2\n");
	load_err("up.yaml", "template file '../t.j2' resolves to ");
	load_err("up.yaml", "outside the settings file's directory");
	settings("abs.yaml", "      lookup_file: /etc/hostname\n");
	load_err("abs.yaml", "lookup file '/etc/hostname' resolves to /etc/hostname, outside");
	snprintf(link, sizeof(link), "%s/escape.j2", dir);
	cr_assert_eq(symlink("/etc/hostname", link), 0);
	settings("link.yaml", "      template_file: escape.j2\n");
	load_err("link.yaml", "outside the settings file's directory");
	settings("list.yaml.p", "      lookup_file: list.yaml\n");
	load_err("list.yaml.p", "must hold a mapping (key: value lines) at its top level, not a list");
	settings("bad.yaml.p", "      lookup_file: bad.yaml\n");
	load_err("bad.yaml.p", "bad.yaml:");
	load_err("bad.yaml.p", "malformed YAML");
	settings("latin1.yaml", "      system_prompt_file: latin1.j2\n");
	load_err("latin1.yaml", "is not valid UTF-8 (at byte 3)");
	settings("nul.yaml", "      template_file: nul.j2\n");
	load_err("nul.yaml", "holds a NUL byte");
	settings("notstr.yaml", "      template_file: [a]\n");
	load_err("notstr.yaml", "template_file");
}

Test(settings_files, absolute_path_inside_is_fine, .init = setup_dir,
     .fini = teardown_dir)
{
	char opts[512];
	core_settings *s;

	puts_file("t.j2", "abs");
	snprintf(opts, sizeof(opts), "      template_file: %s/t.j2\n", dir);
	settings("p.yaml", opts);
	s = load_ok("p.yaml");
	cr_expect_str_eq(opt(s, "template"), "abs");
	core_settings_free(s);
}
