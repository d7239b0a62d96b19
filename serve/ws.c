/*
 * ws.c — GET /ws/runs/{id}: a run watched over a WebSocket (RFC 6455),
 * with ELSPETH's messages (its web API's RunEvent): {"run_id",
 * "timestamp", "event_type": "progress" | "completed" | "cancelled" |
 * "failed", "data": {...}}, {"type": "heartbeat"} after 60 s of silence,
 * and its close codes — 1000 after the run's last event, 4004 for an
 * unknown run (ELSPETH accepts, then closes with it), 4001 for a missing
 * or bad token once logins exist.
 *
 * libmicrohttpd hands the upgraded socket to on_upgrade, which must not
 * block: each WebSocket gets a thread of its own that looks at the run
 * every POLL_MS, sends what changed, answers pings and a close, and then
 * closes the socket through MHD_upgrade_action. srv__ws_stop ends them
 * all before the daemon stops.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include <openssl/evp.h>

#include "serve/serve_internal.h"

#define POLL_MS 250
#define HEARTBEAT_S 60
#define FRAME_MAX 65536           /* a client's message we read at most */
#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

typedef struct ws {
	srv *s;
	char id[64];
	MHD_socket sock;
	struct MHD_UpgradeResponseHandle *urh;
	bool authorized;           /* else closed at once with 4001 */
	char in[FRAME_MAX + 14];   /* a frame being read */
	size_t inlen;
} ws;

/* --------------------------------------------------------- frames */

static bool send_all(ws *w, const void *p, size_t n)
{
	const char *b = p;

	while (n) {
		ssize_t k = send(w->sock, b, n, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return false;
		b += k;
		n -= (size_t)k;
	}
	return true;
}

/* One unmasked frame (a server's) of opcode op. */
static bool send_frame(ws *w, unsigned op, const void *p, size_t n)
{
	unsigned char h[10];
	size_t hl = 2;

	h[0] = (unsigned char)(0x80 | op);
	if (n < 126) {
		h[1] = (unsigned char)n;
	} else if (n < 65536) {
		h[1] = 126;
		h[2] = (unsigned char)(n >> 8), h[3] = (unsigned char)n;
		hl = 4;
	} else {
		h[1] = 127;
		for (int i = 0; i < 8; i++)
			h[2 + i] = (unsigned char)((uint64_t)n >> (56 - 8 * i));
		hl = 10;
	}
	return send_all(w, h, hl) && (!n || send_all(w, p, n));
}

static bool send_json(ws *w, json_t *j)
{
	char *t = j ? json_dumps(j, JSON_COMPACT) : NULL;
	bool ok = t && send_frame(w, 0x1, t, strlen(t));

	free(t);
	json_decref(j);
	return ok;
}

static void send_close(ws *w, unsigned code, const char *reason)
{
	char b[125];
	size_t n = strlen(reason) > sizeof(b) - 2 ? sizeof(b) - 2 : strlen(reason);

	b[0] = (char)(code >> 8), b[1] = (char)code;
	memcpy(b + 2, reason, n);
	send_frame(w, 0x8, b, n + 2);
}

/* Reads what the client sent: pings answered, a close echoed (false: the
 * conversation is over), anything else read and dropped. */
static bool read_client(ws *w)
{
	ssize_t k = recv(w->sock, w->in + w->inlen, sizeof(w->in) - w->inlen, 0);
	size_t need, hl, n;
	unsigned char *b;

	if (k == 0 || (k < 0 && errno != EINTR && errno != EAGAIN))
		return false;
	if (k > 0)
		w->inlen += (size_t)k;
	for (;;) {
		b = (unsigned char *)w->in;
		if (w->inlen < 2)
			return true;
		n = b[1] & 0x7f;
		hl = 2;
		if (n == 126) {
			if (w->inlen < 4)
				return true;
			n = (size_t)b[2] << 8 | b[3];
			hl = 4;
		} else if (n == 127) {
			return false; /* a client message over 64 KiB: not ours to take */
		}
		if (b[1] & 0x80)
			hl += 4; /* the mask */
		need = hl + n;
		if (need > sizeof(w->in))
			return false;
		if (w->inlen < need)
			return true;
		if (b[1] & 0x80)
			for (size_t i = 0; i < n; i++)
				b[hl + i] ^= b[hl - 4 + i % 4];
		switch (b[0] & 0x0f) {
		case 0x8: /* close: echo its code */
			send_frame(w, 0x8, b + hl, n >= 2 ? 2 : 0);
			return false;
		case 0x9: /* ping */
			send_frame(w, 0xA, b + hl, n);
			break;
		default:
			break;
		}
		memmove(w->in, w->in + need, w->inlen - need);
		w->inlen -= need;
	}
}

/* ----------------------------------------------------------- events */

static json_t *now_iso(void)
{
	char b[40];

	core_iso_utc(core_now_wall_ns(), b);
	return json_string(b);
}

static json_t *event(const ws *w, const char *type, json_t *data)
{
	return json_pack("{s:s,s:o,s:s,s:o}", "run_id", w->id, "timestamp", now_iso(),
			 "event_type", type, "data", data);
}

/* The run's terminal event (ELSPETH's data for each). */
static json_t *terminal(const ws *w, const srv_snap *n)
{
	char rid[32];

	snprintf(rid, sizeof(rid), "%llu", (unsigned long long)n->landscape_run);
	switch (n->state) {
	case SRV_COMPLETED:
		return event(w, "completed", json_pack("{s:I,s:I,s:I,s:I,s:o}",
			"rows_processed", (json_int_t)n->rows,
			"rows_succeeded", (json_int_t)n->succeeded,
			"rows_failed", (json_int_t)n->failed,
			"rows_quarantined", (json_int_t)n->quarantined,
			"landscape_run_id", n->landscape_run ? json_string(rid) : json_null()));
	case SRV_CANCELLED:
		return event(w, "cancelled", json_pack("{s:I,s:I}",
			"rows_processed", (json_int_t)n->rows, "rows_failed", (json_int_t)n->failed));
	default:
		return event(w, "failed", json_pack("{s:s,s:n,s:n}", "detail",
			n->error[0] ? n->error : "the run failed", "node_id", "row_id"));
	}
}

static void *ws_main(void *arg)
{
	ws *w = arg;
	srv *s = w->s;
	srv_snap n, last = { .rows = (uint64_t)-1 };
	time_t quiet_since = time(NULL);
	struct pollfd p = { .fd = w->sock, .events = POLLIN };

	if (!w->authorized) {
		send_close(w, 4001, "Invalid authentication token");
		goto out;
	}
	for (;;) {
		if (atomic_load(&s->ws_stop)) {
			send_close(w, 1001, "the server is stopping");
			break;
		}
		if (!srv__snapshot(s, w->id, &n)) {
			send_close(w, 4004, "Run not found");
			break;
		}
		if (n.state >= SRV_COMPLETED) {
			send_json(w, terminal(w, &n));
			send_close(w, 1000, "");
			break;
		}
		if (n.state == SRV_RUNNING && (n.rows != last.rows || n.failed != last.failed)) {
			if (!send_json(w, event(w, "progress", json_pack("{s:I,s:I}",
					"rows_processed", (json_int_t)n.rows,
					"rows_failed", (json_int_t)n.failed))))
				break;
			last = n;
			quiet_since = time(NULL);
		} else if (time(NULL) - quiet_since >= HEARTBEAT_S) {
			if (!send_json(w, json_pack("{s:s}", "type", "heartbeat")))
				break;
			quiet_since = time(NULL);
		}
		if (poll(&p, 1, POLL_MS) > 0 && !read_client(w))
			break;
	}
out:
	MHD_upgrade_action(w->urh, MHD_UPGRADE_ACTION_CLOSE);
	pthread_mutex_lock(&s->lock);
	if (!--s->ws_count)
		pthread_cond_broadcast(&s->ws_done);
	pthread_mutex_unlock(&s->lock);
	free(w);
	return NULL;
}

static void on_upgrade(void *cls, struct MHD_Connection *c, void *con_cls,
		       const char *extra, size_t extra_size, MHD_socket sock,
		       struct MHD_UpgradeResponseHandle *urh)
{
	ws *w = cls;
	pthread_attr_t a;
	pthread_t t;

	(void)c, (void)con_cls;
	w->sock = sock;
	w->urh = urh;
	if (extra_size && extra_size <= sizeof(w->in)) {
		memcpy(w->in, extra, extra_size);
		w->inlen = extra_size;
	}
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_mutex_lock(&w->s->lock);
	w->s->ws_count++;
	pthread_mutex_unlock(&w->s->lock);
	if (pthread_create(&t, &a, ws_main, w)) {
		pthread_mutex_lock(&w->s->lock);
		if (!--w->s->ws_count)
			pthread_cond_broadcast(&w->s->ws_done);
		pthread_mutex_unlock(&w->s->lock);
		MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
		free(w);
	}
	pthread_attr_destroy(&a);
}

/* ------------------------------------------------------ handshake */

static bool has_token(const char *list, const char *token)
{
	size_t n = strlen(token);

	for (const char *p = list; p && *p;) {
		p += strspn(p, " \t,");
		if (!strncasecmp(p, token, n) && (p[n] == '\0' || p[n] == ',' || p[n] == ' '))
			return true;
		p += strcspn(p, ",");
	}
	return false;
}

enum MHD_Result srv__ws(srv *s, struct MHD_Connection *c, const char *id, bool authorized)
{
	const char *key = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Sec-WebSocket-Key");
	const char *ver = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Sec-WebSocket-Version");
	const char *up = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Upgrade");
	const char *conn = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Connection");
	unsigned char digest[EVP_MAX_MD_SIZE], accept[64];
	char material[128];
	unsigned dl = 0;
	struct MHD_Response *r;
	enum MHD_Result rc;
	ws *w;

	if (!key || !ver || strcmp(ver, "13") || !up || strcasecmp(up, "websocket") ||
	    !conn || !has_token(conn, "upgrade") || strlen(key) > 64 ||
	    strlen(id) >= sizeof(w->id)) {
		static const char msg[] = "{\"detail\":\"a WebSocket handshake (version 13) is expected here\"}";

		r = MHD_create_response_from_buffer(sizeof(msg) - 1, (void *)msg,
						    MHD_RESPMEM_PERSISTENT);
		if (!r)
			return MHD_NO;
		MHD_add_response_header(r, "Sec-WebSocket-Version", "13");
		rc = MHD_queue_response(c, MHD_HTTP_UPGRADE_REQUIRED, r);
		MHD_destroy_response(r);
		return rc;
	}
	snprintf(material, sizeof(material), "%s%s", key, WS_GUID);
	if (!EVP_Digest(material, strlen(material), digest, &dl, EVP_sha1(), NULL))
		return MHD_NO;
	EVP_EncodeBlock(accept, digest, (int)dl);
	if (!(w = calloc(1, sizeof(*w))))
		return MHD_NO;
	w->s = s;
	w->authorized = authorized;
	snprintf(w->id, sizeof(w->id), "%s", id);
	if (!(r = MHD_create_response_for_upgrade(on_upgrade, w))) {
		free(w);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_UPGRADE, "websocket");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "Upgrade");
	MHD_add_response_header(r, "Sec-WebSocket-Accept", (const char *)accept);
	rc = MHD_queue_response(c, MHD_HTTP_SWITCHING_PROTOCOLS, r);
	MHD_destroy_response(r);
	if (rc != MHD_YES)
		free(w);
	return rc;
}

void srv__ws_stop(srv *s)
{
	atomic_store(&s->ws_stop, true);
	pthread_mutex_lock(&s->lock);
	while (s->ws_count)
		pthread_cond_wait(&s->ws_done, &s->lock);
	pthread_mutex_unlock(&s->lock);
}
