package guard

// The BPF object and its Go bindings are generated and committed, so
// building polygraph needs no clang. `make generate` reruns this; CI checks
// that doing so changes nothing.
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror -mcpu=v2" -target amd64,arm64 -type allow_key -type deny_key -type deny_val -type name_val guard ../../bpf/guard.bpf.c -- -I../../bpf
//go:generate go tool bpf2go -cc clang -cflags "-O2 -g -Wall -Werror -mcpu=v3" -target amd64,arm64 -type ino_key -type kill_rec -type gate_ev -type cfg enforce ../../bpf/enforce.bpf.c -- -I../../bpf
