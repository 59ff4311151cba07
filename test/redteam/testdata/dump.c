/* libdump: an LD_PRELOAD library that appends every byte its host program
 * reads through read(2) to the file $RT_DUMP: a client (ssh-keygen, git)
 * made to hand over what it reads. Built by the red-team matrix
 * (test/redteam) into its own temporary directory. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
static ssize_t (*real_read)(int, void *, size_t);
ssize_t read(int fd, void *buf, size_t n) {
	if (!real_read) real_read = dlsym(RTLD_NEXT, "read");
	ssize_t r = real_read(fd, buf, n);
	const char *out = getenv("RT_DUMP");
	if (r > 0 && out) {
		int o = open(out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (o >= 0) { write(o, buf, r); close(o); }
	}
	return r;
}
