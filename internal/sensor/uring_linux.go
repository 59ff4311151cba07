package sensor

// The io_uring programs (bpf/uring.h) need the io_uring tracepoints,
// which a kernel built without io_uring lacks: there no process can make
// a ring either, so nothing goes unseen, but it is said once.
func init() {
	const lost = "io_uring operations (no io_uring tracepoints: opens, reads, writes and sends through a ring are not recorded)"
	optionalBTF["uring_create"] = struct{ target, feature string }{"btf_trace_io_uring_create", lost}
	optionalBTF["uring_submit"] = struct{ target, feature string }{"btf_trace_io_uring_submit_req", lost}
	optionalBTF["uring_complete"] = struct{ target, feature string }{"btf_trace_io_uring_complete", lost}
}
