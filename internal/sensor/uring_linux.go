package sensor

import "github.com/cilium/ebpf/btf"

// The io_uring programs (bpf/uring.h) need the io_uring tracepoints,
// which a kernel built without io_uring lacks: there no process can make
// a ring either, so nothing goes unseen, but it is said once.
func init() {
	const lost = "io_uring operations (no io_uring tracepoints: opens, reads, writes and sends through a ring are not recorded)"
	optionalBTF["uring_create"] = struct{ target, feature string }{"btf_trace_io_uring_create", lost}
	optionalBTF["uring_submit"] = struct{ target, feature string }{"btf_trace_io_uring_submit_req", lost}
	optionalBTF["uring_complete"] = struct{ target, feature string }{"btf_trace_io_uring_complete", lost}
}

// drainRing turns the io_uring operation counts of pid (all pids when
// pid is 0) into the KindUring events that total them, and removes them
// from map uring_seen. Only a process the decoder saw use a ring has
// any, so other exits cost nothing.
func (s *Sensor) drainRing(pid uint32) {
	if !s.dec.RingUser(pid) {
		return
	}
	m := s.coll.Maps["uring_seen"]
	if m == nil {
		return
	}
	type kv struct {
		k polygraphUringKey
		v polygraphUringVal
	}
	var found []kv
	var k polygraphUringKey
	var v polygraphUringVal
	it := m.Iterate()
	for it.Next(&k, &v) {
		if pid == 0 || k.Pid == pid {
			found = append(found, kv{k, v})
		}
	}
	for _, f := range found {
		_ = m.Delete(f.k)
		s.emit(s.dec.RingTotal(f.k.Pid, f.k.Op, f.k.Inode, f.k.Ino, f.v.Ops, f.v.Bytes, f.v.LastNs))
	}
	s.dec.ringForget(pid)
}

// probeRing names what the io_uring programs cannot see on an older
// kernel, where they load but do less (bpf/uring.h tests the same types).
func (s *Sensor) probeRing(kspec *btf.Spec) {
	var req, open *btf.Struct
	if kspec.TypeByName("io_kiocb", &req) != nil {
		return // no io_uring at all: optionalBTF said so
	}
	tctx := false
	for _, m := range req.Members {
		tctx = tctx || m.Name == "tctx"
	}
	switch {
	case kspec.TypeByName("io_open", &open) != nil:
		s.noteUnavailable("io_uring operations (kernel < 6.0: only a ring's creation is recorded)")
	case !tctx:
		s.noteUnavailable("io_uring results (kernel < 6.13: operations are recorded when submitted, without results or byte totals)")
	}
}
