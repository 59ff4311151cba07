package guard

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// hookNames maps the BPF program's HOOK_* codes to the names Denial uses.
var hookNames = map[uint8]string{1: "connect4", 2: "connect6", 3: "sendmsg4", 4: "sendmsg6", 5: "sock_create"}

// pinRoot holds the pinned links of live and killed sessions, one
// directory per session ID. It is polygraph's own BPF filesystem
// instance (bpffs mounts do not share pins), mounted on first use, so
// pinning works where nothing mounted /sys/fs/bpf; /run is cleared at
// boot, with everything pinned in it.
var pinRoot = "/run/polygraph/bpf"

// egress is the loaded allowlist programs and their links to the session
// cgroup. The links are pinned where a BPF filesystem allows, so that a
// killed polygraph leaves its tree confined (fail closed) until Cleanup
// kills the tree and unpins them; without a pin the kernel detaches them
// with the dead owner's file descriptors and the tree runs unconfined.
type egress struct {
	objs   guardObjects
	links  []link.Link
	pinDir string
}

// pinDirFor returns where session id's links are pinned, mounting the
// BPF filesystem at pinRoot if needed, or "" when it cannot be had.
func pinDirFor(id string) string {
	if !isBPFFS(pinRoot) {
		if err := os.MkdirAll(pinRoot, 0o700); err != nil {
			slog.Warn("no place to pin the egress links; a killed polygraph leaves its tree unconfined", "err", err)
			return ""
		}
		if err := unix.Mount("bpf", pinRoot, "bpf", 0, "mode=0700"); err != nil && !isBPFFS(pinRoot) {
			slog.Warn("cannot mount a BPF filesystem to pin the egress links; a killed polygraph leaves its tree unconfined", "path", pinRoot, "err", err)
			return ""
		}
	}
	return filepath.Join(pinRoot, id)
}

func isBPFFS(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && st.Type == unix.BPF_FS_MAGIC
}

// attachEgress loads the programs, fills the allowlist and attaches the
// six hooks to the cgroup at dir, pinning the links in pinDir unless it
// is "".
func attachEgress(dir, pinDir string, eg *Egress) (*egress, error) {
	e := &egress{}
	if err := loadGuardObjects(&e.objs, nil); err != nil {
		return nil, fmt.Errorf("load the egress programs: %w", err)
	}
	for _, ep := range eg.Allow {
		if err := e.allow(ep); err != nil {
			e.close()
			return nil, err
		}
	}
	for _, n := range eg.Names {
		if err := e.allowName(n); err != nil {
			e.close()
			return nil, err
		}
	}
	if pinDir != "" {
		if err := os.MkdirAll(pinDir, 0o700); err != nil {
			e.close()
			return nil, fmt.Errorf("create pin directory: %w", err)
		}
		e.pinDir = pinDir
	}
	for _, h := range []struct {
		name string
		prog *ebpf.Program
		at   ebpf.AttachType
	}{
		{"connect4", e.objs.GuardConnect4, ebpf.AttachCGroupInet4Connect},
		{"connect6", e.objs.GuardConnect6, ebpf.AttachCGroupInet6Connect},
		{"sendmsg4", e.objs.GuardSendmsg4, ebpf.AttachCGroupUDP4Sendmsg},
		{"sendmsg6", e.objs.GuardSendmsg6, ebpf.AttachCGroupUDP6Sendmsg},
		{"sock_create", e.objs.GuardSockCreate, ebpf.AttachCGroupInetSockCreate},
		{"dns", e.objs.GuardDns, ebpf.AttachCGroupInetIngress},
	} {
		l, err := link.AttachCgroup(link.CgroupOptions{Path: dir, Attach: h.at, Program: h.prog})
		if err != nil {
			e.close()
			return nil, fmt.Errorf("attach %v to %s: %w", h.at, dir, err)
		}
		e.links = append(e.links, l)
		if pinDir != "" {
			if err := l.Pin(filepath.Join(pinDir, h.name)); err != nil {
				e.close()
				return nil, fmt.Errorf("pin the %s link: %w", h.name, err)
			}
		}
	}
	return e, nil
}

func (e *egress) allow(ep Endpoint) error {
	if !ep.Addr.IsValid() {
		return errors.New("allow: invalid address")
	}
	// As16 of an IPv4 address is its IPv4-mapped form, the key the
	// programs build for AF_INET destinations.
	k := guardAllowKey{Addr: ep.Addr.As16(), Port: ep.Port}
	if err := e.objs.Allow.Update(&k, uint8(1), ebpf.UpdateAny); err != nil {
		return fmt.Errorf("allow %s: %w", ep, err)
	}
	return nil
}

func (e *egress) allowName(n Name) error {
	if n.Host == "" || len(n.Ports) > 4 {
		return fmt.Errorf("allow name %q: want a host and at most four ports", n.Host)
	}
	var v guardNameVal
	copy(v.Ports[:], n.Ports)
	if err := e.objs.Names.Update(nameHash(n.Host), &v, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("allow name %s: %w", n.Host, err)
	}
	return nil
}

// denials reads what the programs refused.
func (e *egress) denials() ([]Denial, error) {
	var (
		k   guardDenyKey
		v   guardDenyVal
		out []Denial
	)
	it := e.objs.Denied.Iterate()
	for it.Next(&k, &v) {
		d := Denial{
			Hook:     hookNames[k.Hook],
			Protocol: int(k.Protocol),
			Count:    v.Count,
			PID:      v.Pid,
			UID:      v.Uid,
		}
		if d.Hook != "sock_create" {
			d.Dest = netip.AddrPortFrom(netip.AddrFrom16(k.Addr).Unmap(), k.Port)
		}
		out = append(out, d)
	}
	if err := it.Err(); err != nil {
		return out, fmt.Errorf("read the denied map: %w", err)
	}
	return out, nil
}

func (e *egress) close() error {
	var errs []error
	for _, l := range e.links {
		if e.pinDir != "" {
			errs = append(errs, l.Unpin())
		}
		errs = append(errs, l.Close())
	}
	e.links = nil
	if e.pinDir != "" {
		errs = append(errs, os.RemoveAll(e.pinDir))
	}
	errs = append(errs, e.objs.Close())
	return errors.Join(errs...)
}
