/*
 * registry.c — the environments open in this process.
 *
 * lmdb.h: "Do not have open an LMDB database twice in the same process at
 * the same time ... close()ing it breaks fcntl() advisory locking." A
 * second rec_open of the same directory would do exactly that, so it is
 * refused with a message instead of risking the lock table.
 *
 * DESIGN: reg_lock guards reg_head and every env's reg_next/registered.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>

#include "recorder/recorder_internal.h"

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static rec_env *reg_head;

int rec__registry_add(rec_env *env, core_err *err)
{
	struct stat st;
	rec_env *e;
	int rc = 0;

	if (stat(env->path, &st) != 0)
		return core_err_set(err, CORE_EIO, "audit trail %s: %s",
				    env->path, strerror(errno));
	pthread_mutex_lock(&reg_lock);
	for (e = reg_head; e; e = e->reg_next)
		if (e->dev == st.st_dev && e->ino == st.st_ino)
			break;
	if (e) {
		rc = core_err_set(err, CORE_EINTERNAL,
			"audit trail %s is already open in this process (as %s); "
			"LMDB forbids opening it twice — share the open rec_env",
			env->path, e->path);
	} else {
		env->dev = st.st_dev;
		env->ino = st.st_ino;
		env->reg_next = reg_head;
		env->registered = true;
		reg_head = env;
	}
	pthread_mutex_unlock(&reg_lock);
	return rc;
}

void rec__registry_remove(rec_env *env)
{
	rec_env **pp;

	pthread_mutex_lock(&reg_lock);
	for (pp = &reg_head; *pp; pp = &(*pp)->reg_next) {
		if (*pp == env) {
			*pp = env->reg_next;
			break;
		}
	}
	env->registered = false;
	pthread_mutex_unlock(&reg_lock);
}
