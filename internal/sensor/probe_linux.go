package sensor

import (
	"errors"
	"fmt"
	"os"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/features"
)

// kernelBTF is where the kernel publishes its own BTF, which every
// program is relocated against (CO-RE).
const kernelBTF = "/sys/kernel/btf/vmlinux"

func probe() []Feature {
	var out []Feature
	kspec, err := btf.LoadKernelSpec()
	btfFeature := Feature{Name: "BTF (" + kernelBTF + ")", State: FeatureOK, Required: true,
		Needed: "every program is a BTF-typed tracepoint relocated against it; without it nothing is recorded (CONFIG_DEBUG_INFO_BTF=y)"}
	if err != nil {
		btfFeature.State = FeatureMissing
		if _, serr := os.Stat(kernelBTF); serr == nil {
			btfFeature.State = FeatureUnknown
			btfFeature.Needed += fmt.Sprintf("; it is there but did not load: %v", err)
		}
	}
	out = append(out, btfFeature)

	trial := func(name, needed string, required bool, err error) {
		f := Feature{Name: name, State: FeatureOK, Needed: needed, Required: required}
		switch {
		case err == nil:
		case errors.Is(err, ebpf.ErrNotSupported):
			f.State = FeatureMissing
		case !privileged():
			f.State = FeatureUnknown
			f.Needed += " (probing loads a trial program: needs root)"
		default:
			f.State = FeatureMissing
			f.Needed += fmt.Sprintf(" (the trial load failed: %v)", err)
		}
		out = append(out, f)
	}
	trial("BTF tracepoints (tp_btf)", "the sensor's hooks (kernel ≥ 5.5); without them nothing is recorded", true,
		haveTpBTF())
	trial("ring buffer", "how records reach polygraph (kernel ≥ 5.8); without it nothing is recorded", true,
		features.HaveMapType(ebpf.RingBuf))
	trial("bpf_loop", "walks paths in the kernel (kernel ≥ 5.17); without it the programs do not load", true,
		features.HaveProgramHelper(ebpf.Kprobe, asm.FnLoop))
	trial("cgroup socket hooks", "run --isolate's egress allowlist (connect, sendmsg, sock_create); without them run --isolate cannot start", false,
		errors.Join(features.HaveProgramType(ebpf.CGroupSockAddr), features.HaveProgramType(ebpf.CGroupSock)))
	trial("cgroup packet hooks", "run --isolate's DNS answers for named egress hosts (cgroup_skb); without them run --isolate cannot start", false,
		features.HaveProgramType(ebpf.CGroupSKB))

	// The optional hooks: those this kernel lacks are dropped before
	// loading (New), and named with what they cost.
	if kspec != nil {
		_, lost := missingHooks(kspec)
		if len(lost) == 0 {
			out = append(out, Feature{Name: "optional hooks", State: FeatureOK,
				Needed: "bytes per peer (sock_{send,recv}_length), io_uring operations with their results"})
		}
		for _, l := range lost {
			out = append(out, Feature{Name: "optional hook", State: FeatureMissing, Needed: l})
		}
	}
	return out
}

// haveTpBTF loads the smallest program of the sensor's kind: a BTF-typed
// raw tracepoint on sched_process_exit, one of the sensor's own hooks
// (features.HaveProgramType(ebpf.Tracing) tries an fentry, which a kernel
// may refuse where tp_btf loads).
func haveTpBTF() error {
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type: ebpf.Tracing, AttachType: ebpf.AttachTraceRawTp, AttachTo: "sched_process_exit",
		License:      "Dual BSD/GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
	})
	if err != nil {
		return err
	}
	return p.Close()
}
