/* fs.c — directories: creating a path's directories, making a rename in
 * a directory durable. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/core.h"

/* mkdir of every prefix of buf ending at a '/' (and of buf itself when
 * whole): buf is modified and restored. */
static int make_dirs(char *buf, bool whole, core_err *err)
{
	for (char *p = buf + 1; ; p++) {
		char c = *p;

		if (c && c != '/')
			continue;
		if (!c && !whole)
			break;
		*p = '\0';
		if (mkdir(buf, 0777) && errno != EEXIST)
			return core_err_set(err, CORE_EIO, "cannot create directory %s: %s",
					    buf, strerror(errno));
		*p = c;
		if (!c)
			break;
	}
	return 0;
}

int core_mkdir_p(const char *dir, core_err *err)
{
	char *buf = strdup(dir);
	struct stat st;
	int rc;

	if (!buf)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	rc = make_dirs(buf, true, err);
	free(buf);
	if (!rc && (stat(dir, &st) || !S_ISDIR(st.st_mode)))
		rc = core_err_set(err, CORE_EIO, "%s is not a directory", dir);
	return rc;
}

int core_mkdir_parents(const char *path, core_err *err)
{
	char *buf = strdup(path);
	int rc;

	if (!buf)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	rc = make_dirs(buf, false, err);
	free(buf);
	return rc;
}

void core_fsync_dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir = slash ? strndup(path, (size_t)(slash - path)) : strdup(".");
	int fd;

	if (!dir)
		return;
	if ((fd = open(dir[0] ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		fsync(fd);
		close(fd);
	}
	free(dir);
}
