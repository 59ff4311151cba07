/* Every io_uring operation the sensor must see, by raw syscalls (no
 * liburing): uring CRED WORKDIR PORT UDPPORT, run in WORKDIR.
 * uring rename OLD NEW: only a rename, by an io-wq worker.
 * uring fixed PATH: open PATH twice into fixed-file slots (no fd comes
 * back: slot 0 named, then one the kernel picks) and read it through
 * the second. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

static int ring;
static unsigned *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
static struct io_uring_sqe *sqes;
static struct io_uring_cqe *cqes;

static int sqpoll; /* URING_SQPOLL=1: a kernel thread submits */

static void setup(void)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof p);
	sqpoll = getenv("URING_SQPOLL") != NULL;
	if (sqpoll) {
		p.flags = IORING_SETUP_SQPOLL;
		p.sq_thread_idle = 1000;
	}
	ring = syscall(__NR_io_uring_setup, 8, &p);
	if (ring < 0) { perror("io_uring_setup"); exit(2); }
	char *sq = mmap(0, p.sq_off.array + p.sq_entries * sizeof(unsigned), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQ_RING);
	char *cq = mmap(0, p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_CQ_RING);
	sqes = mmap(0, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQES);
	if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED) { perror("mmap"); exit(2); }
	sq_tail = (unsigned *)(sq + p.sq_off.tail);
	sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
	sq_array = (unsigned *)(sq + p.sq_off.array);
	cq_head = (unsigned *)(cq + p.cq_off.head);
	cq_tail = (unsigned *)(cq + p.cq_off.tail);
	cq_mask = (unsigned *)(cq + p.cq_off.ring_mask);
	cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
}

/* run submits one request and, unless wait is 0, returns its result. */
static int run(const struct io_uring_sqe *in, int wait)
{
	unsigned tail = *sq_tail, i = tail & *sq_mask;
	sqes[i] = *in;
	sq_array[i] = i;
	__atomic_store_n(sq_tail, tail + 1, __ATOMIC_RELEASE);
	unsigned flags = (wait ? IORING_ENTER_GETEVENTS : 0) | (sqpoll ? IORING_ENTER_SQ_WAKEUP : 0);
	if (syscall(__NR_io_uring_enter, ring, 1, wait, flags, NULL, 0) < 0) {
		perror("io_uring_enter");
		exit(2);
	}
	if (!wait)
		return 0;
	unsigned head = __atomic_load_n(cq_head, __ATOMIC_ACQUIRE);
	while (head == __atomic_load_n(cq_tail, __ATOMIC_ACQUIRE))
		;
	int res = cqes[head & *cq_mask].res;
	__atomic_store_n(cq_head, head + 1, __ATOMIC_RELEASE);
	return res;
}

static int op(const char *what, struct io_uring_sqe *s)
{
	int r = run(s, 1);
	printf("%s = %d\n", what, r);
	if (r < 0) exit(3);
	memset(s, 0, sizeof *s);
	return r;
}

int main(int argc, char **argv)
{
	char abs[4096], buf[64];
	struct io_uring_sqe s;
	memset(&s, 0, sizeof s);
	if (argc == 4 && !strcmp(argv[1], "rename")) {
		setup();
		s.opcode = IORING_OP_RENAMEAT; s.fd = AT_FDCWD; s.addr = (unsigned long)argv[2];
		s.len = AT_FDCWD; s.addr2 = (unsigned long)argv[3]; s.flags = IOSQE_ASYNC;
		op("renameat", &s);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "fixed")) {
		setup();
		int sparse[2] = {-1, -1};
		if (syscall(__NR_io_uring_register, ring, IORING_REGISTER_FILES, sparse, 2) < 0) {
			perror("io_uring_register");
			return 2;
		}
		s.opcode = IORING_OP_OPENAT; s.fd = AT_FDCWD; s.addr = (unsigned long)argv[2]; s.open_flags = O_RDONLY;
		s.file_index = 1; /* slot 0 */
		op("openat fixed", &s);
		s.opcode = IORING_OP_OPENAT; s.fd = AT_FDCWD; s.addr = (unsigned long)argv[2]; s.open_flags = O_RDONLY;
		s.file_index = IORING_FILE_INDEX_ALLOC;
		int slot = op("openat alloc", &s);
		s.opcode = IORING_OP_READ; s.fd = slot; s.flags = IOSQE_FIXED_FILE;
		s.addr = (unsigned long)buf; s.len = sizeof buf;
		op("read fixed", &s);
		return 0;
	}
	if (argc != 5) return 1;
	const char *cred = argv[1], *work = argv[2];
	setup();

	s.opcode = IORING_OP_OPENAT; s.fd = AT_FDCWD; s.addr = (unsigned long)cred; s.open_flags = O_RDONLY;
	int fd = op("openat cred", &s);
	s.opcode = IORING_OP_READ; s.fd = fd; s.addr = (unsigned long)buf; s.len = sizeof buf;
	op("read", &s);
	/* a second read of the same file: counted, not another event */
	s.opcode = IORING_OP_READ; s.fd = fd; s.addr = (unsigned long)buf; s.len = sizeof buf;
	op("read again", &s);

	s.opcode = IORING_OP_OPENAT; s.fd = AT_FDCWD; s.addr = (unsigned long)"new.txt";
	s.open_flags = O_WRONLY | O_CREAT | O_TRUNC; s.len = 0644;
	s.flags = IOSQE_ASYNC; /* run by an io-wq worker, not the submitter */
	int wfd = op("openat new", &s);
	s.opcode = IORING_OP_WRITE; s.fd = wfd; s.addr = (unsigned long)"exfil\n"; s.len = 6;
	s.flags = IOSQE_ASYNC;
	op("write", &s);

	s.opcode = IORING_OP_MKDIRAT; s.fd = AT_FDCWD; s.addr = (unsigned long)"dir"; s.len = 0755;
	op("mkdirat", &s);
	s.opcode = IORING_OP_RENAMEAT; s.fd = AT_FDCWD; s.addr = (unsigned long)"new.txt";
	s.len = AT_FDCWD; s.addr2 = (unsigned long)"dir/renamed.txt";
	op("renameat", &s);
	snprintf(abs, sizeof abs, "%s/linked.txt", work);
	s.opcode = IORING_OP_LINKAT; s.fd = AT_FDCWD; s.addr = (unsigned long)"dir/renamed.txt";
	s.len = AT_FDCWD; s.addr2 = (unsigned long)abs;
	op("linkat", &s);
	s.opcode = IORING_OP_UNLINKAT; s.fd = AT_FDCWD; s.addr = (unsigned long)abs;
	op("unlinkat", &s);

	s.opcode = IORING_OP_SOCKET; s.fd = AF_INET; s.off = SOCK_STREAM; s.len = 0;
	int sfd = op("socket", &s);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[3]))};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s.opcode = IORING_OP_CONNECT; s.fd = sfd; s.addr = (unsigned long)&sa; s.off = sizeof sa;
	op("connect", &s);
	s.opcode = IORING_OP_SEND; s.fd = sfd; s.addr = (unsigned long)"hello"; s.len = 5;
	op("send", &s);

	/* datagrams that name their destination: a sendmsg and a sendto-style send */
	s.opcode = IORING_OP_SOCKET; s.fd = AF_INET; s.off = SOCK_DGRAM; s.len = 0;
	int ufd = op("socket udp", &s);
	struct sockaddr_in ua = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[4]))};
	ua.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	struct iovec iov = {.iov_base = "udp1", .iov_len = 4};
	struct msghdr mh = {.msg_name = &ua, .msg_namelen = sizeof ua, .msg_iov = &iov, .msg_iovlen = 1};
	s.opcode = IORING_OP_SENDMSG; s.fd = ufd; s.addr = (unsigned long)&mh;
	op("sendmsg", &s);
	s.opcode = IORING_OP_SEND; s.fd = ufd; s.addr = (unsigned long)"udp2"; s.len = 4;
	s.addr2 = (unsigned long)&ua; s.addr_len = sizeof ua;
	op("send to", &s);

	/* no completion when it succeeds: only its submission is seen */
	s.opcode = IORING_OP_OPENAT; s.fd = AT_FDCWD; s.addr = (unsigned long)cred; s.open_flags = O_RDONLY;
	s.flags = IOSQE_CQE_SKIP_SUCCESS;
	run(&s, 0);
	memset(&s, 0, sizeof s);
	s.opcode = IORING_OP_FSYNC; s.fd = wfd; s.flags = IOSQE_CQE_SKIP_SUCCESS;
	run(&s, 0);
	usleep(100000);
	return 0;
}
