/*
 * wire.c — chat-completion request bodies, response envelopes and
 * typed multi-query answers (plugins/llm/llm.h, "wire").
 *
 * Request bodies are built as jansson objects (which keep insertion order)
 * and written by core_json_append, so the bytes depend only on the
 * request. Parsing never trusts the body: every step checks the type it
 * reads and says which path was wrong.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "plugins/llm/llm.h"


#define INT_LIMIT 9007199254740992LL /* 2^53: what canonical JSON can hash */

static const char *const type_names[LLM_T_LAST] = {
	"string", "integer", "number", "boolean", "enum"
};

/* ---------------------------------------------------------- helpers */

/* A short description of a value for "got ...": its JSON text (cut to
 * about 60 bytes on a character boundary), or "an object"/"an array". */
static void describe(const json_t *v, char *out, size_t cap)
{
	core_buf b = { 0 };
	size_t n;

	if (json_is_object(v) || json_is_array(v) ||
	    core_json_append(&b, v, -1, 0)) {
		snprintf(out, cap, "%s", core_json_kind(v));
		core_buf_release(&b);
		return;
	}
	n = b.len;
	if (n > 60)
		n = core_utf8_cut(b.data, 60);
	snprintf(out, cap, "%.*s%s", (int)n, b.data, n < b.len ? "..." : "");
	core_buf_release(&b);
}

/* Sets key to a new string value; false on invalid UTF-8 or no memory. */
static bool set_str(json_t *o, const char *key, const char *s)
{
	return !json_object_set_new(o, key, json_string(s));
}

/* ------------------------------------------------------- output fields */

int llm_type_parse(const char *name, llm_type *out, core_err *err)
{
	for (int i = 0; name && i < LLM_T_LAST; i++) {
		if (!strcmp(name, type_names[i])) {
			*out = (llm_type)i;
			return 0;
		}
	}
	return core_err_set(err, CORE_ECONFIG, "unknown output type '%s' (expected "
			    "string, integer, number, boolean or enum)",
			    name ? name : "(none)");
}

static int check_enum(const llm_field *f, core_err *err)
{
	if (!f->nvalues || !f->values)
		return core_err_set(err, CORE_ECONFIG, "output field '%s': an enum "
				    "needs at least one value", f->suffix);
	for (size_t i = 0; i < f->nvalues; i++) {
		if (!f->values[i] ||
		    !core_utf8_valid(f->values[i], strlen(f->values[i])))
			return core_err_set(err, CORE_ECONFIG, "output field '%s': "
					    "enum value %zu is missing or not "
					    "UTF-8", f->suffix, i + 1);
		for (size_t k = 0; k < i; k++)
			if (!strcmp(f->values[k], f->values[i]))
				return core_err_set(err, CORE_ECONFIG, "output field "
						    "'%s': enum value '%s' is listed "
						    "twice", f->suffix, f->values[i]);
	}
	return 0;
}

/* Field specs as both the schema and the answer check need them. */
static int check_fields(const llm_field *fields, size_t n, core_err *err)
{
	if (!n || !fields)
		return core_err_set(err, CORE_ECONFIG, "no output fields");
	for (size_t i = 0; i < n; i++) {
		const llm_field *f = &fields[i];

		if (!f->suffix || !*f->suffix ||
		    !core_utf8_valid(f->suffix, strlen(f->suffix)))
			return core_err_set(err, CORE_ECONFIG, "output field %zu: the "
					    "suffix must be a non-empty UTF-8 "
					    "string", i + 1);
		for (size_t k = 0; k < i; k++)
			if (!strcmp(fields[k].suffix, f->suffix))
				return core_err_set(err, CORE_ECONFIG, "output field "
						    "'%s' is listed twice", f->suffix);
		if ((int)f->type < 0 || f->type >= LLM_T_LAST)
			return core_err_set(err, CORE_ECONFIG, "output field '%s': "
					    "bad type %d", f->suffix, (int)f->type);
		if (f->type == LLM_T_ENUM) {
			int rc = check_enum(f, err);

			if (rc)
				return rc;
		}
	}
	return 0;
}

static json_t *field_schema(const llm_field *f)
{
	json_t *o = json_object(), *vals;
	bool bad = !o;

	if (f->type != LLM_T_ENUM)
		return bad || !set_str(o, "type", type_names[f->type]) ?
			(json_decref(o), NULL) : o;
	bad = bad || !set_str(o, "type", "string");
	vals = json_array();
	for (size_t i = 0; !bad && vals && i < f->nvalues; i++)
		bad = json_array_append_new(vals, json_string(f->values[i])) != 0;
	bad = bad || json_object_set_new(o, "enum", vals) != 0;
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* The schema as a new object in *out. */
static int schema_object(const llm_field *fields, size_t n, json_t **out,
			 core_err *err)
{
	json_t *o, *props, *req;
	bool bad;
	int rc = check_fields(fields, n, err);

	*out = NULL;
	if (rc)
		return rc;
	o = json_object();
	props = json_object();
	req = json_array();
	bad = !o || !props || !req;
	for (size_t i = 0; !bad && i < n; i++) {
		bad = json_object_set_new(props, fields[i].suffix,
					  field_schema(&fields[i])) ||
		      json_array_append_new(req, json_string(fields[i].suffix));
	}
	bad = bad || !set_str(o, "type", "object") ||
	      json_object_set(o, "properties", props) ||
	      json_object_set(o, "required", req) ||
	      json_object_set_new(o, "additionalProperties", json_false());
	json_decref(props);
	json_decref(req);
	if (bad) {
		json_decref(o);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	*out = o;
	return 0;
}

/* Appends v compactly, or leaves out as it was. */
static int append_json(core_buf *out, const json_t *v, core_err *err)
{
	size_t len0 = out->len;

	if (!core_json_append(out, v, -1, 0))
		return 0;
	out->len = len0;
	if (out->data)
		out->data[len0] = '\0';
	return core_err_set(err, CORE_ENOMEM, "out of memory");
}

int llm_schema_append(core_buf *out, const llm_field *fields, size_t n,
		      core_err *err)
{
	json_t *s;
	int rc = schema_object(fields, n, &s, err);

	if (rc)
		return rc;
	rc = append_json(out, s, err);
	json_decref(s);
	return rc;
}

int llm_schema_instruction(core_buf *out, const llm_field *fields, size_t n,
			   core_err *err)
{
	static const char lead[] =
		"\n\nAnswer with a JSON object matching this JSON Schema: ";
	size_t len0 = out->len;
	int rc;

	if (core_buf_puts(out, lead))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	rc = llm_schema_append(out, fields, n, err);
	if (rc) {
		out->len = len0;
		if (out->data)
			out->data[len0] = '\0';
	}
	return rc;
}

/* ------------------------------------------------------------ requests */

static bool schema_name_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (!n || n > 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-'))
			return false;
	return true;
}

static int check_request(const llm_request *r, core_err *err)
{
	if (!r->user_prompt)
		return core_err_set(err, CORE_ECONFIG, "request: no user prompt");
	if (r->model && !core_utf8_valid(r->model, strlen(r->model)))
		return core_err_set(err, CORE_ECONFIG, "request: the model name is "
				    "not valid UTF-8");
	if (r->system_prompt &&
	    !core_utf8_valid(r->system_prompt, strlen(r->system_prompt)))
		return core_err_set(err, CORE_EDATA, "request: the system prompt is "
				    "not valid UTF-8");
	if (!core_utf8_valid(r->user_prompt, strlen(r->user_prompt)))
		return core_err_set(err, CORE_EDATA, "request: the user prompt is "
				    "not valid UTF-8");
	if (r->has_temperature && !isfinite(r->temperature))
		return core_err_set(err, CORE_ECONFIG, "request: temperature must be "
				    "a finite number");
	if (r->max_tokens < 0)
		return core_err_set(err, CORE_ECONFIG, "request: max_tokens must not "
				    "be negative (0 leaves it out)");
	if (r->nfields && !schema_name_ok(r->schema_name))
		return core_err_set(err, CORE_ECONFIG, "request: response_format name "
				    "'%s' must be 1-64 letters, digits, '_' or '-'",
				    r->schema_name ? r->schema_name : "");
	return 0;
}

static json_t *message(const char *role, const char *content)
{
	json_t *m = json_object();

	if (m && set_str(m, "role", role) && set_str(m, "content", content))
		return m;
	json_decref(m);
	return NULL;
}

/* {"type":"json_schema","json_schema":{"name":..,"strict":true,"schema":..}} */
static int response_format(const llm_request *r, json_t **out, core_err *err)
{
	json_t *schema, *js, *rf;
	int rc = schema_object(r->fields, r->nfields, &schema, err);

	*out = NULL;
	if (rc)
		return rc;
	js = json_object();
	rf = json_object();
	if (!js || !rf || !set_str(js, "name", r->schema_name) ||
	    json_object_set_new(js, "strict", json_true()) ||
	    json_object_set(js, "schema", schema) ||
	    !set_str(rf, "type", "json_schema") ||
	    json_object_set(rf, "json_schema", js)) {
		json_decref(rf);
		rf = NULL;
	}
	json_decref(schema);
	json_decref(js);
	if (!rf)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	*out = rf;
	return 0;
}

int llm_request_append(core_buf *out, const llm_request *req, core_err *err)
{
	json_t *body, *msgs, *rf = NULL;
	bool bad;
	int rc = check_request(req, err);

	if (!rc && req->nfields)
		rc = response_format(req, &rf, err);
	else if (!rc && req->response_format)
		rf = json_incref((json_t *)req->response_format);
	if (rc)
		return rc;
	body = json_object();
	msgs = json_array();
	bad = !body || !msgs;
	if (!bad && req->model)
		bad = !set_str(body, "model", req->model);
	if (!bad && req->system_prompt)
		bad = json_array_append_new(msgs, message("system", req->system_prompt));
	bad = bad || json_array_append_new(msgs, message("user", req->user_prompt)) ||
	      json_object_set(body, "messages", msgs);
	if (!bad && req->has_temperature)
		bad = json_object_set_new(body, "temperature", json_real(req->temperature));
	if (!bad && req->max_tokens > 0)
		bad = json_object_set_new(body, "max_tokens",
					  json_integer(req->max_tokens));
	if (!bad && rf)
		bad = json_object_set(body, "response_format", rf);
	rc = bad ? core_err_set(err, CORE_ENOMEM, "out of memory") :
		   append_json(out, body, err);
	json_decref(rf);
	json_decref(msgs);
	json_decref(body);
	return rc;
}

/* ----------------------------------------------------------- responses */

void llm_response_release(llm_response *r)
{
	if (!r)
		return;
	free(r->content);
	free(r->finish_reason);
	free(r->model);
	json_decref(r->usage);
	free(r->error_message);
	free(r->error_type);
	free(r->error_code);
	memset(r, 0, sizeof(*r));
}

static int malformed(llm_response *r, core_err *err, const char *fmt, ...)
	CORE_PRINTF(3, 4);

static int malformed(llm_response *r, core_err *err, const char *fmt, ...)
{
	va_list ap;

	r->kind = LLM_RESP_MALFORMED;
	va_start(ap, fmt);
	core_err_vset(err, CORE_EDATA, fmt, ap);
	va_end(ap);
	if (err)
		err->retryable = true;
	return CORE_EDATA;
}

static int nomem(core_err *err)
{
	return core_err_set(err, CORE_ENOMEM, "out of memory");
}

/* A copy of a string value (NUL bytes kept; *len its length). */
static int dup_string(const json_t *v, char **out, size_t *len, core_err *err)
{
	size_t n = json_string_length(v);

	*out = malloc(n + 1);
	if (!*out)
		return nomem(err);
	memcpy(*out, json_string_value(v), n);
	(*out)[n] = '\0';
	if (len)
		*len = n;
	return 0;
}

/* The counters present as integers, or json null without a usage object. */
static int read_usage(const json_t *u, llm_response *r, core_err *err)
{
	static const char *const keys[] = {
		"prompt_tokens", "completion_tokens", "total_tokens"
	};

	r->usage = json_is_object(u) ? json_object() : json_null();
	if (!r->usage)
		return nomem(err);
	for (size_t i = 0; json_is_object(u) && i < 3; i++) {
		const json_t *v = json_object_get(u, keys[i]);

		if (json_is_integer(v) &&
		    json_object_set_new(r->usage, keys[i],
					json_integer(json_integer_value(v))))
			return nomem(err);
	}
	return 0;
}

static int api_error(const json_t *e, llm_response *r, core_err *err)
{
	const json_t *msg = json_is_string(e) ? e : json_object_get(e, "message");
	const json_t *type = json_object_get(e, "type");
	const json_t *code = json_object_get(e, "code");
	char codebuf[32], detail[160] = "";

	r->kind = LLM_RESP_API_ERROR;
	if (json_is_string(msg) && dup_string(msg, &r->error_message, NULL, err))
		return CORE_ENOMEM;
	if (json_is_string(type) && dup_string(type, &r->error_type, NULL, err))
		return CORE_ENOMEM;
	if (json_is_string(code) && dup_string(code, &r->error_code, NULL, err))
		return CORE_ENOMEM;
	if (json_is_integer(code)) {
		snprintf(codebuf, sizeof(codebuf), "%" JSON_INTEGER_FORMAT,
			 json_integer_value(code));
		if (!(r->error_code = strdup(codebuf)))
			return nomem(err);
	}
	if (r->error_type && r->error_code)
		snprintf(detail, sizeof(detail), " (type %.60s, code %.60s)",
			 r->error_type, r->error_code);
	else if (r->error_type || r->error_code)
		snprintf(detail, sizeof(detail), " (%s %.60s)",
			 r->error_type ? "type" : "code",
			 r->error_type ? r->error_type : r->error_code);
	return core_err_set(err, CORE_EDATA, "API error: %.600s%s",
			    r->error_message ? r->error_message : "(no message)",
			    detail);
}

/* choices[0] and its message, or a malformed-envelope error. */
static int first_choice(const json_t *root, llm_response *r,
			const json_t **choice, const json_t **message,
			core_err *err)
{
	const json_t *choices = json_object_get(root, "choices");

	if (!choices)
		return malformed(r, err, "choices missing");
	if (!json_is_array(choices))
		return malformed(r, err, "choices is %s, not an array",
				 core_json_kind(choices));
	if (!json_array_size(choices))
		return malformed(r, err, "choices is empty");
	*choice = json_array_get(choices, 0);
	if (!json_is_object(*choice))
		return malformed(r, err, "choices[0] is %s, not an object",
				 core_json_kind(*choice));
	*message = json_object_get(*choice, "message");
	if (!*message)
		return malformed(r, err, "choices[0].message missing");
	if (!json_is_object(*message))
		return malformed(r, err, "choices[0].message is %s, not an object",
				 core_json_kind(*message));
	return 0;
}

/* The envelope of a decoded object body. */
static int parse_envelope(const json_t *root, llm_response *r, core_err *err)
{
	const json_t *e = json_object_get(root, "error"), *choice = NULL, *message = NULL;
	const json_t *content, *finish, *model = json_object_get(root, "model");
	int rc;

	if (e && !json_is_null(e))
		return api_error(e, r, err);
	if (json_is_string(model) && dup_string(model, &r->model, NULL, err))
		return CORE_ENOMEM;
	rc = read_usage(json_object_get(root, "usage"), r, err);
	if (!rc)
		rc = first_choice(root, r, &choice, &message, err);
	if (rc)
		return rc;
	finish = json_object_get(choice, "finish_reason");
	content = json_object_get(message, "content");
	if (finish && !json_is_null(finish) && !json_is_string(finish))
		return malformed(r, err, "choices[0].finish_reason is %s, not a "
				 "string", core_json_kind(finish));
	if (!content)
		return malformed(r, err, "choices[0].message.content missing");
	if (!json_is_string(content) && !json_is_null(content))
		return malformed(r, err, "choices[0].message.content is %s, not a "
				 "string", core_json_kind(content));
	if (json_is_string(finish) &&
	    dup_string(finish, &r->finish_reason, NULL, err))
		return CORE_ENOMEM;
	if (json_is_string(content) &&
	    dup_string(content, &r->content, &r->content_len, err))
		return CORE_ENOMEM;
	if (r->finish_reason && strcmp(r->finish_reason, "stop")) {
		r->kind = LLM_RESP_FINISH;
		return core_err_set(err, CORE_EDATA, "finish_reason is '%.100s', "
				    "not 'stop'%s", r->finish_reason,
				    !strcmp(r->finish_reason, "length") ?
				    " (the answer was cut at max_tokens)" : "");
	}
	if (!r->content) {
		const json_t *refusal = json_object_get(message, "refusal");

		r->kind = LLM_RESP_NULL_CONTENT;
		return core_err_set(err, CORE_EDATA, "choices[0].message.content is "
				    "null%s%.300s%s",
				    json_is_string(refusal) ? " (refusal: " : "",
				    json_is_string(refusal) ?
				    json_string_value(refusal) : "",
				    json_is_string(refusal) ? ")" : "");
	}
	r->kind = LLM_RESP_OK;
	return 0;
}

int llm_response_parse(const void *body, size_t len, llm_response *out,
		       core_err *err)
{
	json_error_t je;
	json_t *root;
	int rc;

	memset(out, 0, sizeof(*out));
	out->kind = LLM_RESP_MALFORMED;
	if (!body && len)
		return malformed(out, err, "response has no body");
	root = json_loadb(body ? body : "", len, JSON_DECODE_ANY | JSON_ALLOW_NUL,
			  &je);
	if (!root) {
		if (json_error_code(&je) == json_error_out_of_memory)
			return nomem(err);
		return malformed(out, err, "response is not JSON at byte %d: %s",
				 je.position, je.text);
	}
	if (!json_is_object(root))
		rc = malformed(out, err, "response is %s, not a JSON object",
			       core_json_kind(root));
	else
		rc = parse_envelope(root, out, err);
	json_decref(root);
	return rc;
}

/* ------------------------------------------------------- typed answers */

static bool is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Narrows [*b, *e) to the JSON inside surrounding whitespace and an
 * optional ``` / ```json fence (the closing fence is then required). */
static int strip_fence(const char *query, const char **b, const char **e,
		       core_err *err)
{
	const char *p = *b, *q = *e;

	while (p < q && is_ws(*p))
		p++;
	while (q > p && is_ws(q[-1]))
		q--;
	if (q - p >= 3 && !memcmp(p, "```", 3)) {
		p += 3;
		if (q - p >= 4 && !strncasecmp(p, "json", 4))
			p += 4;
		if (q - p < 3 || memcmp(q - 3, "```", 3))
			return core_err_set(err, CORE_EDATA, "query '%s': the answer "
					    "opens a ``` fence but does not close "
					    "it", query);
		q -= 3;
	}
	*b = p;
	*e = q;
	return 0;
}

static int decode_answer(const char *query, const char *content, size_t len,
			 json_t **out, bool *ints_as_reals, core_err *err)
{
	const char *b = content, *e = content + len;
	json_error_t je;
	int rc = strip_fence(query, &b, &e, err);
	size_t flags = JSON_DECODE_ANY | JSON_REJECT_DUPLICATES;

	if (rc)
		return rc;
	*ints_as_reals = false;
	*out = json_loadb(b, (size_t)(e - b), flags, &je);
	if (!*out && json_error_code(&je) == json_error_numeric_overflow) {
		/* An integer past 64 bits: read every number as a real (exact
		 * up to 2^53, all the integer type accepts). */
		*ints_as_reals = true;
		*out = json_loadb(b, (size_t)(e - b), flags | JSON_DECODE_INT_AS_REAL,
				  &je);
	}
	if (!*out && json_error_code(&je) == json_error_out_of_memory)
		return nomem(err);
	if (!*out)
		return core_err_set(err, CORE_EDATA, "query '%s': the answer is not "
				    "JSON at byte %d: %s", query,
				    je.position + (int)(b - content), je.text);
	if (!json_is_object(*out)) {
		rc = core_err_set(err, CORE_EDATA, "query '%s': the answer is %s, "
				  "not a JSON object", query, core_json_kind(*out));
		json_decref(*out);
		*out = NULL;
	}
	return rc;
}

static int type_error(const char *query, const llm_field *f, const json_t *v,
		      const char *extra, core_err *err)
{
	char got[96];

	describe(v, got, sizeof(got));
	return core_err_set(err, CORE_EDATA, "query '%s' field '%s': expected %s, "
			    "got %s%s", query, f->suffix, type_names[f->type],
			    got, extra);
}

static int enum_error(const char *query, const llm_field *f, const json_t *v,
		      core_err *err)
{
	core_buf list = { 0 };
	char got[96];
	int rc = 0;

	for (size_t i = 0; !rc && i < f->nvalues && list.len < 300; i++)
		rc = core_buf_printf(&list, "%s\"%s\"", i ? ", " : "", f->values[i]);
	describe(v, got, sizeof(got));
	rc = rc ? nomem(err) :
		  core_err_set(err, CORE_EDATA, "query '%s' field '%s': expected one "
			       "of %s%s, got %s", query, f->suffix, list.data,
			       list.len >= 300 ? ", ..." : "", got);
	core_buf_release(&list);
	return rc;
}

static bool enum_has(const llm_field *f, const json_t *v)
{
	size_t n = json_string_length(v);

	for (size_t i = 0; i < f->nvalues; i++)
		if (strlen(f->values[i]) == n &&
		    !memcmp(f->values[i], json_string_value(v), n))
			return true;
	return false;
}

/* An integral real within +-2^53 as an integer; NULL otherwise. */
static json_t *integral(double d)
{
	if (d != floor(d) || fabs(d) > (double)INT_LIMIT)
		return NULL;
	return json_integer((json_int_t)d);
}

/* The column value for v under f's type (a new reference), or an error. */
static int convert(const char *query, const llm_field *f, json_t *v,
		   bool ints_as_reals, json_t **out, core_err *err)
{
	json_int_t i = json_integer_value(v);

	*out = NULL;
	switch (f->type) {
	case LLM_T_STRING:
	case LLM_T_ENUM:
		if (!json_is_string(v))
			return f->type == LLM_T_ENUM ? enum_error(query, f, v, err) :
				type_error(query, f, v, "", err);
		if (f->type == LLM_T_ENUM && !enum_has(f, v))
			return enum_error(query, f, v, err);
		*out = json_incref(v);
		break;
	case LLM_T_INTEGER:
		if (json_is_real(v)) {
			double d = json_real_value(v);

			if (d != floor(d))
				return type_error(query, f, v, "", err);
			if (fabs(d) > (double)INT_LIMIT)
				return type_error(query, f, v, " (outside +-2^53)", err);
			*out = json_integer((json_int_t)d);
			break;
		}
		if (!json_is_integer(v))
			return type_error(query, f, v, "", err);
		if (i < -INT_LIMIT || i > INT_LIMIT)
			return type_error(query, f, v, " (outside +-2^53)", err);
		*out = json_incref(v);
		break;
	case LLM_T_NUMBER:
		if (!json_is_number(v))
			return type_error(query, f, v, "", err);
		if (json_is_integer(v) && (i < -INT_LIMIT || i > INT_LIMIT))
			*out = json_real((double)i);
		else if (ints_as_reals && json_is_real(v))
			*out = integral(json_real_value(v));
		if (!*out)
			*out = json_incref(v);
		break;
	case LLM_T_BOOLEAN:
		if (!json_is_boolean(v))
			return type_error(query, f, v, "", err);
		*out = json_incref(v);
		break;
	case LLM_T_LAST:
		return core_err_set(err, CORE_EINTERNAL, "bad output type");
	}
	return *out ? 0 : nomem(err);
}

static int put_column(json_t *cols, const char *query, const char *suffix,
		      json_t *v, core_err *err)
{
	core_buf key = { 0 };
	int rc = core_buf_printf(&key, "%s_%s", query, suffix);

	if (rc || json_object_set_new(cols, key.data, v))
		rc = nomem(err);
	core_buf_release(&key);
	return rc;
}

int llm_answer_apply(const char *query, const char *content, size_t len,
		     const llm_field *fields, size_t n, json_t *dest,
		     core_err *err)
{
	json_t *ans = NULL, *cols = NULL;
	bool as_reals = false;
	int rc = check_fields(fields, n, err);

	if (!rc && (!query || !*query ||
		    !core_utf8_valid(query, strlen(query))))
		rc = core_err_set(err, CORE_ECONFIG, "a query needs a non-empty "
				  "UTF-8 name");
	if (!rc && !json_is_object(dest))
		rc = core_err_set(err, CORE_EINTERNAL, "query '%s': the destination "
				  "is not an object", query);
	if (!rc)
		rc = decode_answer(query, content ? content : "", content ? len : 0,
				   &ans, &as_reals, err);
	if (!rc && !(cols = json_object()))
		rc = nomem(err);
	for (size_t i = 0; !rc && i < n; i++) {
		json_t *v = json_object_get(ans, fields[i].suffix), *col;

		if (!v) {
			rc = core_err_set(err, CORE_EDATA, "query '%s' field '%s' is "
					  "missing from the answer", query,
					  fields[i].suffix);
			break;
		}
		rc = convert(query, &fields[i], v, as_reals, &col, err);
		if (!rc)
			rc = put_column(cols, query, fields[i].suffix, col, err);
	}
	if (!rc && json_object_update(dest, cols))
		rc = nomem(err);
	json_decref(cols);
	json_decref(ans);
	return rc;
}
