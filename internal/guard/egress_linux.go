package guard

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// hookNames maps the BPF program's HOOK_* codes to the names Denial uses.
var hookNames = map[uint8]string{1: "connect4", 2: "connect6", 3: "sendmsg4", 4: "sendmsg6"}

// egress is the loaded allowlist programs and their links to the session
// cgroup. The links are not pinned: when polygraph dies, however it dies,
// the kernel detaches them with its file descriptors.
type egress struct {
	objs  guardObjects
	links []link.Link
}

// attachEgress loads the programs, fills the allowlist and attaches the
// four hooks to the cgroup at dir.
func attachEgress(dir string, allow []Endpoint) (*egress, error) {
	e := &egress{}
	if err := loadGuardObjects(&e.objs, nil); err != nil {
		return nil, fmt.Errorf("load the egress programs: %w", err)
	}
	for _, ep := range allow {
		if err := e.allow(ep); err != nil {
			e.close()
			return nil, err
		}
	}
	for _, h := range []struct {
		prog *ebpf.Program
		at   ebpf.AttachType
	}{
		{e.objs.GuardConnect4, ebpf.AttachCGroupInet4Connect},
		{e.objs.GuardConnect6, ebpf.AttachCGroupInet6Connect},
		{e.objs.GuardSendmsg4, ebpf.AttachCGroupUDP4Sendmsg},
		{e.objs.GuardSendmsg6, ebpf.AttachCGroupUDP6Sendmsg},
	} {
		l, err := link.AttachCgroup(link.CgroupOptions{Path: dir, Attach: h.at, Program: h.prog})
		if err != nil {
			e.close()
			return nil, fmt.Errorf("attach %v to %s: %w", h.at, dir, err)
		}
		e.links = append(e.links, l)
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

// denials reads what the programs refused.
func (e *egress) denials() ([]Denial, error) {
	var (
		k   guardDenyKey
		v   guardDenyVal
		out []Denial
	)
	it := e.objs.Denied.Iterate()
	for it.Next(&k, &v) {
		addr := netip.AddrFrom16(k.Addr).Unmap()
		out = append(out, Denial{
			Dest:     netip.AddrPortFrom(addr, k.Port),
			Hook:     hookNames[k.Hook],
			Protocol: int(k.Protocol),
			Count:    v.Count,
			PID:      v.Pid,
			UID:      v.Uid,
		})
	}
	if err := it.Err(); err != nil {
		return out, fmt.Errorf("read the denied map: %w", err)
	}
	return out, nil
}

func (e *egress) close() error {
	var errs []error
	for _, l := range e.links {
		errs = append(errs, l.Close())
	}
	e.links = nil
	errs = append(errs, e.objs.Close())
	return errors.Join(errs...)
}
