package sensor

// The BPF object and its Go bindings are generated and committed, so
// building polygraph needs no clang. `make generate` reruns this; CI checks
// that doing so changes nothing.
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror -mcpu=v2" -target amd64,arm64 -type ev_header -type ev_exec -type ev_fork -type ev_exit -type ev_path -type ev_sock -type ev_dns -type ev_call -type ev_peer -type ev_key -type ev_mount -type peer_key -type peer_val -type proc_info -type ev_uring -type uring_ident -type watch_key -type sec_open_key -type reopen_val -type key_seen_key polygraph ../../bpf/polygraph.bpf.c -- -I../../bpf
