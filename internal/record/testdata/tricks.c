/* tricks: the techniques the kernel-truth tests run under the sensor,
 * one per mode (argv[1]). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/ip_icmp.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <elf.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef MSG_FASTOPEN
#define MSG_FASTOPEN 0x20000000
#endif

static struct sockaddr_in race_sa;
static volatile int race_done;
static uint16_t race_ports[2];

static void *flipper(void *arg)
{
	(void)arg;
	while (!race_done)
		race_sa.sin_port = race_sa.sin_port == race_ports[0] ? race_ports[1] : race_ports[0];
	return 0;
}

static struct sockaddr_in loopback(const char *ip, int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	inet_pton(AF_INET, ip, &sa.sin_addr);
	return sa;
}

/* race PORT_A PORT_B N: connect N times while a thread flips the port in
 * the sockaddr; print the port each connect reached. */
static int do_race(char **argv)
{
	race_ports[0] = htons(atoi(argv[2]));
	race_ports[1] = htons(atoi(argv[3]));
	int n = atoi(argv[4]);
	race_sa = loopback("127.0.0.1", 0);
	race_sa.sin_port = race_ports[0];
	pthread_t th;
	pthread_create(&th, 0, flipper, 0);
	for (int i = 0; i < n; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(fd, (struct sockaddr *)&race_sa, sizeof(race_sa)) < 0) {
			printf("0\n");
			close(fd);
			continue;
		}
		struct sockaddr_in peer;
		socklen_t len = sizeof(peer);
		getpeername(fd, (struct sockaddr *)&peer, &len);
		printf("%d\n", ntohs(peer.sin_port));
		close(fd);
	}
	race_done = 1;
	pthread_join(th, 0);
	return 0;
}

/* udp PORT N: send N 10-byte datagrams to 127.0.0.1:PORT, with sendto,
 * sendmsg and sendmmsg in turn. */
static int do_udp(char **argv)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in sa = loopback("127.0.0.1", atoi(argv[2]));
	int n = atoi(argv[3]);
	char buf[10] = "0123456789";
	for (int i = 0; i < n; i++) {
		struct iovec iov = {buf, sizeof(buf)};
		struct msghdr m = {.msg_name = &sa, .msg_namelen = sizeof(sa), .msg_iov = &iov, .msg_iovlen = 1};
		struct mmsghdr mm = {.msg_hdr = m};
		ssize_t r;
		switch (i % 3) {
		case 0:
			r = sendto(fd, buf, sizeof(buf), 0, (struct sockaddr *)&sa, sizeof(sa));
			break;
		case 1:
			r = sendmsg(fd, &m, 0);
			break;
		default:
			r = sendmmsg(fd, &mm, 1, 0) == 1 ? (ssize_t)mm.msg_len : -1;
		}
		if (r != sizeof(buf)) {
			perror("send");
			return 1;
		}
	}
	return 0;
}

/* udpmany PORT N: one sendmmsg of N datagrams to 127.0.0.1:PORT..PORT+N-1. */
static int do_udpmany(char **argv)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	int port = atoi(argv[2]), n = atoi(argv[3]);
	struct sockaddr_in sa[64];
	struct iovec iov[64];
	struct mmsghdr mm[64];
	if (n > 64)
		n = 64;
	memset(mm, 0, sizeof(mm));
	for (int i = 0; i < n; i++) {
		sa[i] = loopback("127.0.0.1", port + i);
		iov[i].iov_base = "0123456789";
		iov[i].iov_len = 10;
		mm[i].msg_hdr.msg_name = &sa[i];
		mm[i].msg_hdr.msg_namelen = sizeof(sa[i]);
		mm[i].msg_hdr.msg_iov = &iov[i];
		mm[i].msg_hdr.msg_iovlen = 1;
	}
	if (sendmmsg(fd, mm, n, 0) != n) {
		perror("sendmmsg");
		return 1;
	}
	return 0;
}

/* raw IP: send an ICMP echo request to IP through a raw socket. */
static int do_raw(char **argv)
{
	int fd = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP);
	if (fd < 0) {
		perror("socket");
		return 1;
	}
	struct sockaddr_in sa = loopback(argv[2], 0);
	struct icmphdr h = {.type = ICMP_ECHO};
	h.checksum = ~htons(ICMP_ECHO << 8); /* the rest is zero */
	if (sendto(fd, &h, sizeof(h), 0, (struct sockaddr *)&sa, sizeof(sa)) != sizeof(h)) {
		perror("sendto");
		return 1;
	}
	return 0;
}

/* tfo PORT: TCP Fast Open: connect and send in one sendto. */
static int do_tfo(char **argv)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = loopback("127.0.0.1", atoi(argv[2]));
	if (sendto(fd, "hello", 5, MSG_FASTOPEN, (struct sockaddr *)&sa, sizeof(sa)) != 5) {
		perror("sendto");
		return 1;
	}
	close(fd);
	return 0;
}

/* handle FILE: name_to_handle_at FILE, then open_by_handle_at it through
 * a descriptor of its directory, and read it. */
static int do_handle(char **argv)
{
	struct file_handle *fh = malloc(sizeof(*fh) + MAX_HANDLE_SZ);
	fh->handle_bytes = MAX_HANDLE_SZ;
	int mount_id;
	if (name_to_handle_at(AT_FDCWD, argv[2], fh, &mount_id, 0) < 0) {
		perror("name_to_handle_at");
		return 1;
	}
	int mfd = open("/", O_RDONLY | O_DIRECTORY);
	int fd = open_by_handle_at(mfd, fh, O_RDONLY);
	if (fd < 0) {
		perror("open_by_handle_at");
		return 1;
	}
	char buf[64];
	return read(fd, buf, sizeof(buf)) < 0;
}

/* unix_addr is the address of the Unix socket at path. */
static struct sockaddr_un unix_addr(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	strncpy(sa.sun_path, path, sizeof(sa.sun_path) - 1);
	return sa;
}

/* unixlisten PATH: listen on a Unix socket and accept for ever. */
static int do_unixlisten(char **argv)
{
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sa = unix_addr(argv[2]);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 16) < 0) {
		perror("listen");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		int c = accept(fd, 0, 0);
		if (c >= 0)
			close(c);
	}
}

/* unixconnect PATH: connect, and stay a while, so the listener's accept
 * finds the connecting process still there. */
static int do_unixconnect(char **argv)
{
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sa = unix_addr(argv[2]);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("connect");
		return 1;
	}
	usleep(200000);
	return 0;
}

static volatile long flag;
static volatile pid_t sleeper_tid;

static void *sleeper(void *arg)
{
	(void)arg;
	sleeper_tid = gettid();
	for (;;)
		pause();
	return 0;
}

/* victim ADDRFILE READFILE: write &flag and the tid of a second thread to
 * ADDRFILE, then wait; each time flag turns non-zero, read READFILE and
 * clear it. */
static int do_victim(char **argv)
{
	pthread_t th;
	pthread_create(&th, 0, sleeper, 0);
	while (!sleeper_tid)
		usleep(1000);
	FILE *f = fopen(argv[2], "w");
	fprintf(f, "%lu %d\n", (unsigned long)&flag, sleeper_tid);
	fclose(f);
	for (;;) {
		if (flag) {
			int fd = open(argv[3], O_RDONLY);
			char buf[16];
			if (fd >= 0) {
				read(fd, buf, sizeof(buf));
				close(fd);
			}
			flag = 0;
		}
		usleep(10000);
	}
	return 0;
}

/* ptrace PID ADDR: attach, poke 1 at ADDR, detach. */
static int do_ptrace(char **argv)
{
	pid_t pid = atoi(argv[2]);
	unsigned long addr = strtoul(argv[3], 0, 10);
	if (ptrace(PTRACE_ATTACH, pid, 0, 0) < 0) {
		perror("PTRACE_ATTACH");
		return 1;
	}
	waitpid(pid, 0, 0);
	if (ptrace(PTRACE_POKEDATA, pid, (void *)addr, (void *)1) < 0)
		perror("PTRACE_POKEDATA");
	ptrace(PTRACE_DETACH, pid, 0, 0);
	return 0;
}

/* vmwrite PID ADDR: write 1 at ADDR with process_vm_writev. */
static int do_vmwrite(char **argv)
{
	pid_t pid = atoi(argv[2]);
	long one = 1;
	struct iovec local = {&one, sizeof(one)};
	struct iovec remote = {(void *)strtoul(argv[3], 0, 10), sizeof(one)};
	if (process_vm_writev(pid, &local, 1, &remote, 1, 0) != sizeof(one)) {
		perror("process_vm_writev");
		return 1;
	}
	return 0;
}

/* procmem PID ADDR: write 1 at ADDR through /proc/PID/mem. */
static int do_procmem(char **argv)
{
	char path[64];
	long one = 1;
	snprintf(path, sizeof(path), "/proc/%s/mem", argv[2]);
	int fd = open(path, O_RDWR);
	if (fd < 0 || pwrite(fd, &one, sizeof(one), (off_t)strtoul(argv[3], 0, 10)) != sizeof(one)) {
		perror(path);
		return 1;
	}
	return 0;
}

/* fiforead PATH OUT N DELAYMS: print ready, then N times: wait DELAYMS,
 * open the FIFO PATH for reading, append what it gives to OUT, close. */
static int do_fiforead(char **argv)
{
	int n = atoi(argv[4]), delay = atoi(argv[5]);
	printf("ready\n");
	fflush(stdout);
	for (int i = 0; i < n; i++) {
		usleep(delay * 1000);
		int fd = open(argv[2], O_RDONLY);
		if (fd < 0) {
			perror(argv[2]);
			return 1;
		}
		int out = open(argv[3], O_WRONLY | O_CREAT | O_APPEND, 0644);
		char buf[256];
		ssize_t r;
		while ((r = read(fd, buf, sizeof(buf))) > 0)
			write(out, buf, r);
		close(out);
		close(fd);
	}
	return 0;
}

/* vmread PID ADDR: read 8 bytes at ADDR with process_vm_readv. */
static int do_vmread(char **argv)
{
	long v;
	struct iovec local = {&v, sizeof(v)};
	struct iovec remote = {(void *)strtoul(argv[3], 0, 10), sizeof(v)};
	if (process_vm_readv(atoi(argv[2]), &local, 1, &remote, 1, 0) != sizeof(v)) {
		perror("process_vm_readv");
		return 1;
	}
	return 0;
}

/* vmreadkill PID ADDR: vmread, then kill the target at once: its
 * executable is gone from /proc before any reader of the record looks. */
static int do_vmreadkill(char **argv)
{
	if (do_vmread(argv))
		return 1;
	return kill(atoi(argv[2]), SIGKILL) != 0;
}

/* procmemread PID ADDR: read 8 bytes at ADDR through /proc/PID/mem. */
static int do_procmemread(char **argv)
{
	char path[64];
	long v;
	snprintf(path, sizeof(path), "/proc/%s/mem", argv[2]);
	int fd = open(path, O_RDONLY);
	if (fd < 0 || pread(fd, &v, sizeof(v), (off_t)strtoul(argv[3], 0, 10)) != sizeof(v)) {
		perror(path);
		return 1;
	}
	return 0;
}

/* procmempath PID: open /proc/PID/mem with O_PATH (and O_WRONLY, which
 * O_PATH ignores): a descriptor that can neither read nor write it. */
static int do_procmempath(char **argv)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%s/mem", argv[2]);
	int fd = open(path, O_PATH | O_WRONLY);
	if (fd < 0) {
		perror(path);
		return 1;
	}
	return 0;
}

/* peek PID ADDR: attach, peek ADDR 100 times, peek the user area, read
 * the registers and write them back unchanged, detach. */
static int do_peek(char **argv)
{
	pid_t pid = atoi(argv[2]);
	void *addr = (void *)strtoul(argv[3], 0, 10);
	if (ptrace(PTRACE_ATTACH, pid, 0, 0) < 0) {
		perror("PTRACE_ATTACH");
		return 1;
	}
	waitpid(pid, 0, 0);
	for (int i = 0; i < 100; i++)
		ptrace(PTRACE_PEEKDATA, pid, addr, 0);
	ptrace(PTRACE_PEEKUSER, pid, 0, 0);
	struct user_regs_struct regs;
	struct iovec iov = {&regs, sizeof(regs)};
	if (ptrace(PTRACE_GETREGSET, pid, (void *)NT_PRSTATUS, &iov) < 0)
		perror("PTRACE_GETREGSET");
	else if (ptrace(PTRACE_SETREGSET, pid, (void *)NT_PRSTATUS, &iov) < 0)
		perror("PTRACE_SETREGSET");
	ptrace(PTRACE_DETACH, pid, 0, 0);
	return 0;
}

/* unixdgram PATH N [again]: send N datagrams to the Unix socket bound at
 * PATH from an unconnected socket (sendto), then one more with sendmsg;
 * with "again", then exec itself to do it once more in the same pid. */
static int do_unixdgram(int argc, char **argv)
{
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	struct sockaddr_un sa = unix_addr(argv[2]);
	size_t plen = strlen(sa.sun_path);
	for (int i = 0; i < atoi(argv[3]); i++) {
		/* the same path each time, with other bytes after its NUL and
		 * another length: one destination */
		memset(sa.sun_path + plen + 1, 'A' + i, sizeof(sa.sun_path) - plen - 1);
		socklen_t alen = offsetof(struct sockaddr_un, sun_path) + plen + 1 + i;
		if (sendto(fd, "secret", 6, 0, (struct sockaddr *)&sa, alen) != 6) {
			perror("sendto");
			return 1;
		}
	}
	struct iovec iov = {"secret", 6};
	struct msghdr m = {.msg_name = &sa, .msg_namelen = sizeof(sa), .msg_iov = &iov, .msg_iovlen = 1};
	if (sendmsg(fd, &m, 0) != 6)
		return 1;
	if (argc == 5 && !strcmp(argv[4], "again")) {
		char *args[] = {argv[0], argv[1], argv[2], argv[3], 0};
		execv(argv[0], args);
		perror("execv");
		return 1;
	}
	return 0;
}

/* holdfd PATH FD: open PATH as fd FD, print ready and wait: an outside
 * process with a secret open. */
static int do_holdfd(char **argv)
{
	int fd = open(argv[2], O_RDONLY);
	if (fd < 0 || dup2(fd, atoi(argv[3])) < 0) {
		perror("holdfd");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}

/* getfd PID FD: take fd FD of process PID with pidfd_getfd(2), no path
 * named, and read from it. */
static int do_getfd(char **argv)
{
	int pidfd = syscall(SYS_pidfd_open, atoi(argv[2]), 0);
	if (pidfd < 0) {
		perror("pidfd_open");
		return 1;
	}
	int fd = syscall(SYS_pidfd_getfd, pidfd, atoi(argv[3]), 0);
	if (fd < 0) {
		perror("pidfd_getfd");
		return 1;
	}
	char buf[64];
	return read(fd, buf, sizeof(buf)) <= 0;
}

/* fdserver SOCK PATH DECOY: listen on the Unix socket SOCK, print ready,
 * and hand every client a pipe's end, DECOY and PATH opened, in one
 * SCM_RIGHTS message: an outside process passing a secret in behind an
 * ordinary file. */
static int do_fdserver(char **argv)
{
	int l = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sa = unix_addr(argv[2]);
	if (bind(l, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(l, 4) < 0) {
		perror("fdserver");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		int c = accept(l, 0, 0);
		if (c < 0)
			continue;
		int p[2];
		int f = open(argv[3], O_RDONLY), dec = open(argv[4], O_RDONLY);
		if (f < 0 || dec < 0 || pipe(p) < 0) {
			close(c);
			continue;
		}
		char ctl[CMSG_SPACE(3 * sizeof(int))];
		memset(ctl, 0, sizeof(ctl));
		struct iovec iov = {"x", 1};
		struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl)};
		struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(3 * sizeof(int));
		int fds[3] = {p[0], dec, f};
		memcpy(CMSG_DATA(cm), fds, sizeof(fds));
		sendmsg(c, &m, 0);
		close(dec);
		close(f);
		close(p[0]);
		close(p[1]);
		close(c);
	}
}

/* recvfd SOCK: connect to SOCK, receive the fds it sends, and read from
 * each. */
static int do_recvfd(char **argv)
{
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sa = unix_addr(argv[2]);
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("connect");
		return 1;
	}
	char ctl[CMSG_SPACE(4 * sizeof(int))], b[64];
	struct iovec iov = {b, 1};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl)};
	if (recvmsg(s, &m, 0) < 1) {
		perror("recvmsg");
		return 1;
	}
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
	if (!cm || cm->cmsg_type != SCM_RIGHTS) {
		fprintf(stderr, "no fds\n");
		return 1;
	}
	int n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
	int *fds = (int *)CMSG_DATA(cm);
	for (int i = 0; i < n; i++)
		if (read(fds[i], b, sizeof(b)) < 0)
			perror("read");
	return 0;
}

/* unixdgramrecv PATH: bind a datagram socket at PATH, print ready, and
 * receive for ever. */
static int do_unixdgramrecv(char **argv)
{
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	struct sockaddr_un sa = unix_addr(argv[2]);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("bind");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	char buf[64];
	for (;;)
		recv(fd, buf, sizeof(buf), 0);
}

/* bpf: create a one-element array map with bpf(2). */
static int do_bpf(void)
{
	uint32_t attr[32] = {2 /* BPF_MAP_TYPE_ARRAY */, 4, 4, 1};
	long fd = syscall(SYS_bpf, 0 /* BPF_MAP_CREATE */, attr, sizeof(attr));
	printf("%ld\n", fd);
	return fd < 0;
}

/* kill PID: send SIGURG (which a Go program takes in its stride) to PID
 * with kill, tgkill and pidfd_send_signal. */
static int do_kill(char **argv)
{
	pid_t pid = atoi(argv[2]);
	int err = kill(pid, SIGURG);
	err |= syscall(SYS_tgkill, pid, pid, SIGURG);
	int pfd = syscall(SYS_pidfd_open, pid, 0);
	if (pfd >= 0)
		err |= syscall(SYS_pidfd_send_signal, pfd, SIGURG, 0, 0);
	return err != 0;
}

/* killgroup PGID: send SIGURG to the caller's process group and to PGID's. */
static int do_killgroup(char **argv)
{
	return (kill(0, SIGURG) | kill(-atoi(argv[2]), SIGURG)) != 0;
}

/* envforge SECONDS: rewrite this process's own HOME in place, in the
 * environment block the kernel laid out at exec (what /proc/PID/environ
 * shows), to a decoy of the same length, then stay alive for SECONDS. */
static int do_envforge(char **argv, char **envp)
{
	for (char **e = envp; *e; e++) {
		if (!strncmp(*e, "HOME=", 5)) {
			for (char *c = *e + 5; *c; c++)
				*c = 'x';
			break;
		}
	}
	printf("forged\n");
	fflush(stdout);
	sleep(atoi(argv[2]));
	return 0;
}

/* slurp opens path and reads it through. */
static void slurp(const char *path)
{
	char b[256];
	int f = open(path, O_RDONLY);
	if (f < 0)
		return;
	while (read(f, b, sizeof(b)) > 0)
		;
	close(f);
}

/* unixserve PATH: a daemon on a Unix stream socket: for each connection,
 * read a path, open and read that file, answer "ok". */
static int do_unixserve(char **argv)
{
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sa = unix_addr(argv[2]);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 16) < 0) {
		perror("listen");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		char req[256] = {};
		int c = accept(fd, 0, 0);
		if (c < 0)
			continue;
		if (read(c, req, sizeof(req) - 1) > 0) {
			slurp(req);
			if (write(c, "ok", 2) < 0)
				perror("write");
		}
		close(c);
	}
}

/* dgramserve PATH: a daemon on a Unix datagram socket bound at PATH: each
 * datagram names a file it opens and reads. */
static int do_dgramserve(char **argv)
{
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	struct sockaddr_un sa = unix_addr(argv[2]);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("bind");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		char req[256] = {};
		if (recv(fd, req, sizeof(req) - 1, 0) > 0)
			slurp(req);
	}
}

/* unixask PATH REQ: connect to the stream socket at PATH, send REQ and
 * wait for the answer. */
static int do_unixask(char **argv)
{
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sa = unix_addr(argv[2]);
	char b[16];
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || write(fd, argv[3], strlen(argv[3])) < 0 ||
	    read(fd, b, sizeof(b)) < 0) {
		perror("unixask");
		return 1;
	}
	return 0;
}

/* dgramask PATH REQ: send REQ in one datagram to the socket bound at PATH. */
static int do_dgramask(char **argv)
{
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	struct sockaddr_un sa = unix_addr(argv[2]);
	if (sendto(fd, argv[3], strlen(argv[3]), 0, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("sendto");
		return 1;
	}
	return 0;
}

/* watchread FILE THEN: a watcher: poll FILE's identity every 20 ms; when it
 * changes, fork a child that reads FILE and then THEN (the child, like a
 * watcher's build, acts after the tree's file). */
static int do_watchread(char **argv)
{
	struct stat st0 = {}, st;
	stat(argv[2], &st0);
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		usleep(20000);
		if (stat(argv[2], &st) < 0 || (st.st_ino == st0.st_ino && st.st_mtim.tv_nsec == st0.st_mtim.tv_nsec &&
					      st.st_mtim.tv_sec == st0.st_mtim.tv_sec))
			continue;
		st0 = st;
		pid_t p = fork();
		if (p == 0) {
			slurp(argv[2]);
			slurp(argv[3]);
			_exit(0);
		}
		waitpid(p, 0, 0);
	}
}

int main(int argc, char **argv, char **envp)
{
	if (argc < 2)
		return 2;
	const char *m = argv[1];
	if (!strcmp(m, "race") && argc == 5)
		return do_race(argv);
	if (!strcmp(m, "udp") && argc == 4)
		return do_udp(argv);
	if (!strcmp(m, "udpmany") && argc == 4)
		return do_udpmany(argv);
	if (!strcmp(m, "raw") && argc == 3)
		return do_raw(argv);
	if (!strcmp(m, "tfo") && argc == 3)
		return do_tfo(argv);
	if (!strcmp(m, "handle") && argc == 3)
		return do_handle(argv);
	if (!strcmp(m, "unixlisten") && argc == 3)
		return do_unixlisten(argv);
	if (!strcmp(m, "unixserve") && argc == 3)
		return do_unixserve(argv);
	if (!strcmp(m, "dgramserve") && argc == 3)
		return do_dgramserve(argv);
	if (!strcmp(m, "unixask") && argc == 4)
		return do_unixask(argv);
	if (!strcmp(m, "dgramask") && argc == 4)
		return do_dgramask(argv);
	if (!strcmp(m, "watchread") && argc == 4)
		return do_watchread(argv);
	if (!strcmp(m, "unixconnect") && argc == 3)
		return do_unixconnect(argv);
	if (!strcmp(m, "victim") && argc == 4)
		return do_victim(argv);
	if (!strcmp(m, "ptrace") && argc == 4)
		return do_ptrace(argv);
	if (!strcmp(m, "vmwrite") && argc == 4)
		return do_vmwrite(argv);
	if (!strcmp(m, "procmem") && argc == 4)
		return do_procmem(argv);
	if (!strcmp(m, "fiforead") && argc == 6)
		return do_fiforead(argv);
	if (!strcmp(m, "vmread") && argc == 4)
		return do_vmread(argv);
	if (!strcmp(m, "vmreadkill") && argc == 4)
		return do_vmreadkill(argv);
	if (!strcmp(m, "procmemread") && argc == 4)
		return do_procmemread(argv);
	if (!strcmp(m, "procmempath") && argc == 3)
		return do_procmempath(argv);
	if (!strcmp(m, "peek") && argc == 4)
		return do_peek(argv);
	if (!strcmp(m, "unixdgram") && (argc == 4 || argc == 5))
		return do_unixdgram(argc, argv);
	if (!strcmp(m, "fdserver") && argc == 5)
		return do_fdserver(argv);
	if (!strcmp(m, "recvfd") && argc == 3)
		return do_recvfd(argv);
	if (!strcmp(m, "holdfd") && argc == 4)
		return do_holdfd(argv);
	if (!strcmp(m, "getfd") && argc == 4)
		return do_getfd(argv);
	if (!strcmp(m, "unixdgramrecv") && argc == 3)
		return do_unixdgramrecv(argv);
	if (!strcmp(m, "bpf"))
		return do_bpf();
	if (!strcmp(m, "killgroup") && argc == 3)
		return do_killgroup(argv);
	if (!strcmp(m, "kill") && argc == 3)
		return do_kill(argv);
	if (!strcmp(m, "envforge") && argc == 3)
		return do_envforge(argv, envp);
	if (!strcmp(m, "hello"))
		return printf("hello\n") < 0;
	return 2;
}
