/*
 * answer.c — parse a chat-completion request, build its answer (see
 * answer.h). Structured answers follow the request's JSON Schema: one value
 * per property, drawn from the prompt hash and the property's name.
 */
#include "answer.h"
#include "buf.h"
#include "hash.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define STANDARD_PROMPT "Answer with a JSON object matching this JSON Schema:"

/* The text of a message's content: a string, or an array of parts whose
 * "text" members are joined by newlines. */
static void content_text(const json_t *content, mock_buf *out)
{
	size_t i;
	json_t *part;

	if (json_is_string(content)) {
		mock_buf_add(out, json_string_value(content),
			     json_string_length(content));
		return;
	}
	if (!json_is_array(content))
		return;
	json_array_foreach(content, i, part) {
		const json_t *t = json_object_get(part, "text");

		if (json_is_string(t)) {
			if (out->len)
				mock_buf_add(out, "\n", 1);
			mock_buf_add(out, json_string_value(t),
				     json_string_length(t));
		}
	}
}

static long count_words(const char *s, size_t n)
{
	long w = 0;
	int in = 0;

	for (size_t i = 0; i < n; i++) {
		int sp = isspace((unsigned char)s[i]);

		w += !sp && !in;
		in = !sp;
	}
	return w;
}

static long count_chars(const char *s, size_t n)
{
	long c = 0;

	for (size_t i = 0; i < n; i++)
		c += ((unsigned char)s[i] & 0xc0) != 0x80;
	return c;
}

/* max_tokens, else max_completion_tokens, else -1. */
static long max_tokens_of(const json_t *root)
{
	const json_t *m = json_object_get(root, "max_tokens");

	if (!json_is_integer(m))
		m = json_object_get(root, "max_completion_tokens");
	if (!json_is_integer(m) || json_integer_value(m) < 0)
		return -1;
	return json_integer_value(m) > 1000000000 ? 1000000000 :
	       (long)json_integer_value(m);
}

static int fail(char *err, size_t n, const char *msg)
{
	snprintf(err, n, "%s", msg);
	return -1;
}

/* The standard prompt mode: the message ends with STANDARD_PROMPT, at the
 * start of a line, followed by a JSON Schema object. */
static json_t *prompt_schema(const char *text)
{
	const char *p = NULL, *q = text;
	json_t *s;

	while ((q = strstr(q, STANDARD_PROMPT)) != NULL) {
		if (q == text || q[-1] == '\n')
			p = q;
		q++;
	}
	if (!p)
		return NULL;
	s = json_loads(p + strlen(STANDARD_PROMPT), 0, NULL);
	if (s && !json_is_object(s)) {
		json_decref(s);
		s = NULL;
	}
	return s;
}

/* json_object without a schema: the object template the messages show
 * (the last user message first, then the others from the first). */
static json_t *hinted_schema(const json_t *root)
{
	const json_t *msgs = json_object_get(root, "messages");
	size_t n = json_array_size(msgs);
	json_t *s = NULL;

	for (size_t k = 0; k < n && !s; k++) {
		size_t i = k ? k - 1 : n - 1;
		mock_buf text = { 0 };

		if (k && i == n - 1)
			continue;
		content_text(json_object_get(json_array_get(msgs, i), "content"),
			     &text);
		if (text.len) {
			mock_buf_add(&text, "", 1);
			s = mock_hint_schema(text.data);
		}
		mock_buf_release(&text);
	}
	return s;
}

static int parse_format(mock_chat *c, char *err, size_t n)
{
	const json_t *rf = json_object_get(c->root, "response_format");
	const char *type = json_string_value(json_object_get(rf, "type"));

	if (rf && !json_is_object(rf))
		return fail(err, n, "'response_format' must be an object");
	if (type && !strcmp(type, "json_schema")) {
		c->schema = json_object_get(json_object_get(rf, "json_schema"),
					    "schema");
		if (!json_is_object(c->schema))
			return fail(err, n, "response_format.json_schema.schema "
				    "must be an object");
	} else if (type && !strcmp(type, "json_object")) {
		c->json_object = 1;
	}
	if (!c->schema) {
		c->prompt_schema = prompt_schema(c->last_user);
		c->schema = c->prompt_schema;
	}
	if (!c->schema && c->json_object) {
		c->prompt_schema = hinted_schema(c->root);
		c->schema = c->prompt_schema;
	}
	return 0;
}

static void hash_messages(mock_chat *c, const json_t *messages)
{
	static const char hex[] = "0123456789abcdef";
	char *canon = json_dumps(messages, JSON_COMPACT | JSON_SORT_KEYS);
	uint8_t d[32];

	if (!canon)
		abort();
	mock_sha256(canon, strlen(canon), d);
	free(canon);
	memcpy(c->id, "chatcmpl-", 9);
	for (int i = 0; i < 12; i++) {
		c->id[9 + 2 * i] = hex[d[i] >> 4];
		c->id[10 + 2 * i] = hex[d[i] & 15];
	}
	c->id[33] = '\0';
	for (int i = 0; i < 8; i++)
		c->req_hash = c->req_hash << 8 | d[i];
}

int mock_chat_parse(mock_chat *c, const char *body, size_t len, char *err,
		    size_t errlen)
{
	const json_t *messages, *m;
	mock_buf last = { 0 };
	int have_user = 0;
	json_error_t je;
	size_t i;

	memset(c, 0, sizeof(*c));
	c->root = json_loadb(body, len, 0, &je);
	if (!c->root) {
		snprintf(err, errlen, "the request body is not valid JSON: %s "
			 "(line %d, column %d)", je.text, je.line, je.column);
		return -1;
	}
	if (!json_is_object(c->root))
		return fail(err, errlen, "the request body must be a JSON object");
	messages = json_object_get(c->root, "messages");
	if (!json_is_array(messages) || !json_array_size(messages))
		return fail(err, errlen, "'messages' must be a non-empty array "
			    "of {role, content} objects");
	json_array_foreach(messages, i, m) {
		const char *role = json_string_value(json_object_get(m, "role"));
		int is_user = role && !strcmp(role, "user");
		mock_buf text = { 0 };

		if (!role) {
			mock_buf_release(&last);
			snprintf(err, errlen, "messages[%zu] must be an object "
				 "with a string 'role'", i);
			return -1;
		}
		content_text(json_object_get(m, "content"), &text);
		c->prompt_tokens += count_words(text.data ? text.data : "",
						text.len);
		c->prompt_chars += count_chars(text.data ? text.data : "",
					       text.len);
		/* the last user message, else the last message */
		if (is_user || (!have_user && i + 1 == json_array_size(messages))) {
			mock_buf_release(&last);
			last = text;
			have_user |= is_user;
		} else {
			mock_buf_release(&text);
		}
	}
	c->max_tokens = max_tokens_of(c->root);
	c->last_user = mock_buf_detach(&last, NULL);
	c->prompt_hash = mock_hash64(c->last_user, strlen(c->last_user));
	hash_messages(c, messages);
	return parse_format(c, err, errlen);
}

void mock_chat_release(mock_chat *c)
{
	json_decref(c->root);
	json_decref(c->prompt_schema);
	free(c->last_user);
	memset(c, 0, sizeof(*c));
}

/* ------------------------------------------------- structured values */

static const char *label_for(const mock_cfg *cfg, uint64_t h)
{
	return cfg->labels[h % cfg->nlabels];
}

static const char *schema_type(const json_t *s)
{
	const json_t *t = json_object_get(s, "type");
	size_t i;
	json_t *e;

	if (json_is_string(t))
		return json_string_value(t);
	json_array_foreach(t, i, e)
		if (json_is_string(e) && strcmp(json_string_value(e), "null"))
			return json_string_value(e);
	return "string";
}

/* A range from the schema's minimum/maximum, else [dlo, dlo + width]. */
static void range(const json_t *s, double dlo, double width, double *lo,
		  double *hi)
{
	const json_t *mn = json_object_get(s, "minimum");
	const json_t *mx = json_object_get(s, "maximum");

	*lo = json_is_number(mn) ? json_number_value(mn) : dlo;
	*hi = json_is_number(mx) ? json_number_value(mx) : *lo + width;
	if (!json_is_number(mn) && json_is_number(mx) && *hi < dlo)
		*lo = *hi - width;
	if (*hi < *lo)
		*hi = *lo;
}

/* How many values 0..width holds, kept to 1..1e15. */
static uint64_t steps(double width)
{
	return width < 0 || isnan(width) ? 1 :
	       width > 1e15 ? (uint64_t)1e15 : (uint64_t)width + 1;
}

static json_t *gen(const json_t *s, uint64_t h, const mock_cfg *cfg,
		   int depth);

static json_t *gen_object(const json_t *s, uint64_t h, const mock_cfg *cfg,
			  int depth)
{
	json_t *o = json_object();
	const char *name;
	json_t *p;

	json_object_foreach(json_object_get(s, "properties"), name, p)
		json_object_set_new(o, name,
				    gen(p, mock_hash_with(h, name), cfg, depth + 1));
	return o;
}

static json_t *gen(const json_t *s, uint64_t h, const mock_cfg *cfg,
		   int depth)
{
	const json_t *en = json_object_get(s, "enum");
	const char *type = schema_type(s);
	double lo, hi;

	if (json_is_array(en) && json_array_size(en))
		return json_deep_copy(json_array_get(en, h % json_array_size(en)));
	if (json_object_get(s, "const"))
		return json_deep_copy(json_object_get(s, "const"));
	if (depth > 16)
		return json_null();
	if (!strcmp(type, "object"))
		return gen_object(s, h, cfg, depth);
	if (!strcmp(type, "array"))
		return json_pack("[o]", gen(json_object_get(s, "items"),
					    mock_hash_with(h, "0"), cfg,
					    depth + 1));
	if (!strcmp(type, "integer")) {
		range(s, 0, 100, &lo, &hi);
		lo = ceil(lo);
		return json_integer((json_int_t)lo +
				    (json_int_t)(h % steps(floor(hi) - lo)));
	}
	if (!strcmp(type, "number")) {
		range(s, 0, 1, &lo, &hi);
		return json_real(round(lo * 100 + (double)(h % steps(
			floor((hi - lo) * 100)))) / 100);
	}
	if (!strcmp(type, "boolean"))
		return json_boolean(h >> 63);
	if (!strcmp(type, "null"))
		return json_null();
	return json_string(label_for(cfg, h));
}

/* ----------------------------------------------------------- answers */

static char *dump(const json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY |
			     JSON_REAL_PRECISION(15));

	if (!s)
		abort();
	return s;
}

static char *content_for(const mock_chat *c, const mock_cfg *cfg)
{
	mock_buf b = { 0 };
	uint64_t fence = mock_hash_with(c->prompt_hash, "\001fence");
	json_t *v;
	char *s;

	if (c->schema) {
		v = gen(c->schema, c->prompt_hash, cfg, 0);
	} else if (c->json_object) {
		v = json_pack("{s:s}", "label", label_for(cfg, c->prompt_hash));
	} else {
		return mock_xstrdup(!strcmp(cfg->answer, "echo") ?
				    c->last_user :
				    label_for(cfg, c->prompt_hash));
	}
	s = dump(v);
	json_decref(v);
	if (!c->prompt_schema ||
	    (double)(fence >> 11) * 0x1.0p-53 >= cfg->fence_rate)
		return s;
	mock_buf_addf(&b, "```json\n%s\n```", s);
	free(s);
	return mock_buf_detach(&b, NULL);
}

char *mock_chat_answer(const mock_chat *c, const mock_cfg *cfg,
		       const char *model, int cut, size_t *len)
{
	char *content = content_for(c, cfg), *out;
	size_t n = strlen(content);
	long q;
	json_t *env;

	if (cut) {
		n /= 2;
		while (n && ((unsigned char)content[n] & 0xc0) == 0x80)
			n--;
		content[n] = '\0';
	}
	q = count_words(content, n);
	env = json_pack("{s:s, s:s, s:i, s:s, s:[{s:i, s:{s:s, s:s}, s:s}], "
			"s:{s:I, s:I, s:I}}",
			"id", c->id, "object", "chat.completion",
			"created", 1700000000, "model", model,
			"choices", "index", 0, "message", "role", "assistant",
			"content", content, "finish_reason",
			cut ? "length" : "stop",
			"usage", "prompt_tokens", (json_int_t)c->prompt_tokens,
			"completion_tokens", (json_int_t)q, "total_tokens",
			(json_int_t)(c->prompt_tokens + q));
	free(content);
	if (!env)
		abort();
	out = dump(env);
	json_decref(env);
	*len = strlen(out);
	return out;
}

char *mock_error_body(const char *message, const char *type,
		      const char *code, size_t *len)
{
	json_t *e = json_pack("{s:{s:s, s:s, s:s?}}", "error", "message",
			      message, "type", type, "code", code);
	char *out;

	if (!e)
		abort();
	out = dump(e);
	json_decref(e);
	*len = strlen(out);
	return out;
}
