/* tel_http.h — sending to collectors (http.c); telemetry's own. */
#ifndef ELSPETH_TEL_HTTP_H
#define ELSPETH_TEL_HTTP_H

#include <curl/curl.h>

#include "telemetry/tel_internal.h"

#define TEL_HTTP_TRIES 5

typedef struct tel_http_req {
	const char *url;
	const char *shown;             /* the url as messages show it */
	const char *content_type;      /* not for gRPC */
	const struct curl_slist *headers; /* more, "Name: value" */
	const void *body;
	size_t len;
	bool grpc;                     /* HTTP/2, application/grpc, trailers */
	bool put;                      /* PUT instead of POST */
	long timeout_ms;               /* 0: 10 s */
	unsigned tries;                /* 0: TEL_HTTP_TRIES */
} tel_http_req;

/* Sends q, retrying as the OTLP specification says. 0 (the answer's
 * body in *reply when not NULL: the caller releases it), or CORE_EIO
 * naming the url (as shown), the status and the collector's reason. */
int tel__http_send(const tel_http_req *q, core_buf *reply, core_err *err);

/* url without its password, for messages. */
void tel__url_shown(const char *url, char *out, size_t cap);

#endif
