package sensor

import (
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/testenv"
)

// keyScript adds a key to its own process keyring, then finds, describes
// and reads it through keyctl(2) and request_key(2) directly (ctypes, no
// keyctl program), once it is told to go (after it is tracked) and given
// the payload on its input, and prints the key's serial.
const keyScript = `import ctypes, os, platform, sys
nr = {"x86_64": (248, 249, 250), "aarch64": (217, 218, 219)}[platform.machine()]
libc = ctypes.CDLL(None, use_errno=True)
def sc(*a):
    r = libc.syscall(*a)
    if r < 0:
        sys.exit("syscall %r: errno %d" % (a[0], ctypes.get_errno()))
    return r
payload = sys.stdin.readline().strip().encode()  # the go, and a payload no argv shows
desc = sys.argv[1].encode()
kid = sc(nr[0], b"user", desc, payload, len(payload), -2)          # add_key, the process keyring
found = sc(nr[2], 10, -2, b"user", desc, 0)                         # KEYCTL_SEARCH
buf = ctypes.create_string_buffer(512)
sc(nr[2], 6, found, buf, 512)                                       # KEYCTL_DESCRIBE
sc(nr[2], 11, found, None, 0)                                       # KEYCTL_READ, the length only
for _ in range(2):
    n = sc(nr[2], 11, found, buf, 512)                              # KEYCTL_READ, the payload (twice)
assert buf.raw[:n] == payload
sc(nr[1], b"user", desc, None, 0)                                   # request_key
print(kid)
`

// TestKeyringCalls: keyctl(2), add_key(2) and request_key(2) made by a
// traced process are key events naming the operation, the key's serial,
// its type and description (from the call, and from the kernel's answer
// to describe) and how much of the payload a read handed over, never the
// payload itself; each first operation went to the security ring (its
// mark in key_seen) and the repeated read is still recorded.
func TestKeyringCalls(t *testing.T) {
	testenv.RequireRoot(t)
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	s, err := New(Options{})
	testenv.Feature(t, "BPF sensor", err)
	defer s.Close()
	var mu sync.Mutex
	var evs []*event.Event
	s.Start(func(ev *event.Event) {
		mu.Lock()
		evs = append(evs, ev)
		mu.Unlock()
	})

	desc, payload := "polygraph-test:"+strconv.Itoa(time.Now().Nanosecond()), "tok_s3cr3t_payload_never_recorded"
	cmd := exec.Command("python3", "-c", keyScript, desc)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	start, err := StartTimeNS(pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Track(uint32(pid), start); err != nil {
		t.Fatal(err)
	}
	in.Write([]byte(payload + "\n"))
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("key script: %v: %s", err, out.String())
	}
	serial, err := strconv.Atoi(strings.TrimSpace(out.String()))
	if err != nil {
		t.Fatalf("key script printed %q", out.String())
	}
	time.Sleep(200 * time.Millisecond)
	s.Stop()

	mu.Lock()
	defer mu.Unlock()
	var keys []*event.Event
	for _, e := range evs {
		if e.PID == uint32(pid) && e.Kind == event.KindKey {
			keys = append(keys, e)
		}
		if b, _ := json.Marshal(e); strings.Contains(string(b), payload) {
			t.Errorf("the payload is in a recorded event: %s", b)
		}
	}
	var got []string
	for _, e := range keys {
		got = append(got, e.KeyOp()+" "+strconv.Itoa(int(e.KeySerial()))+" "+e.KeyType()+":"+e.KeyDesc()+" ring "+
			strconv.Itoa(int(e.KeyRing()))+" bytes "+strconv.Itoa(int(e.KeyBytes())))
	}
	k := strconv.Itoa(serial)
	n := strconv.Itoa(len(payload))
	want := []string{
		"add " + k + " user:" + desc + " ring -2 bytes 0",
		"search " + k + " user:" + desc + " ring -2 bytes 0",
		"describe " + k + " user:" + desc + " ring 0 bytes 0",
		"read " + k + " : ring 0 bytes 0",
		"read " + k + " : ring 0 bytes " + n,
		"read " + k + " : ring 0 bytes " + n,
		"request " + k + " user:" + desc + " ring 0 bytes 0",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("key events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, e := range keys {
		if e.Failed() {
			t.Errorf("%s failed: %d", e.KeyOp(), *e.Result)
		}
	}
	if r := keys[4].Result; r == nil || *r != int64(len(payload)) {
		t.Errorf("read result %v, want the payload's length %d", r, len(payload))
	}
	// The first read of the payload went to the security ring: key_seen
	// holds its mark (the repeat found it there).
	var mark polygraphKeySeenKey
	var one uint8
	found := false
	it := s.coll.Maps["key_seen"].Iterate()
	for it.Next(&mark, &one) {
		if mark.Tgid == uint32(pid) && mark.Op == 11 && mark.Serial == int32(serial) && mark.Outcome == 2 {
			found = true
		}
	}
	if !found {
		t.Error("key_seen has no mark of the payload read: it did not go to the security ring")
	}
}
