package otlp

import (
	"path"
	"sort"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/event"
)

// effects are the file and network events one span will carry: distinct
// ones, each with how often it happened, cut to MaxEffects.
type effects struct {
	byKey   map[string]int // index into list
	list    []effect
	routine int // loader reads left out (routineRead)
}

// effect is one distinct effect: its first event (index i) and count.
type effect struct {
	i, n int
	rank int // 0 evidence, 1 writes and network, 2 reads, 3 failed
}

func (f *effects) add(key string, i, rank int) {
	if f.byKey == nil {
		f.byKey = map[string]int{}
	}
	if j, ok := f.byKey[key]; ok {
		f.list[j].n++
		f.list[j].rank = min(f.list[j].rank, rank)
		return
	}
	f.byKey[key] = len(f.list)
	f.list = append(f.list, effect{i: i, n: 1, rank: rank})
}

// effectKind reports whether an event kind is an effect a span carries
// (the exec, fork and exit events are the spans themselves).
func effectKind(k event.Kind) bool {
	switch k {
	case event.KindExec, event.KindFork, event.KindExit:
		return false
	}
	return true
}

// placeEffects puts every effect of the snapshot on the span that carries
// it, when that span leaves in this update: a process's on its span (a
// fork that never exec'd on its exec'd ancestor's), an in-process call's
// on the call's, unexplained activity of the agent's own processes on the
// root. An effect whose span left in an earlier update, built before the
// effect was recorded, goes on the root at the end, naming its call.
func (b *builder) placeEffects() {
	if b.ats == nil {
		return
	}
	root := b.out[b.st.rootID]
	for i, e := range b.evs {
		if !effectKind(e.Kind) {
			continue
		}
		g := b.groupOf(i)
		if g == "" {
			continue
		}
		host := b.groupSpan(g)
		if b.tree != nil {
			if im := b.hostImage(b.tree.Image(e.ExecID)); im != nil && b.groups[im.Index] == g && !b.capped[im.Index] {
				host = b.st.execID(im.ID)
			}
		}
		o := b.out[host]
		if o == nil {
			// Not leaving now: it left already, or will later.
			if seq, sent := b.st.sent[host]; !sent || e.Seq <= seq || root == nil {
				continue
			}
			o = root // recorded after its span left: said at the end
		}
		if routineRead(e) && !b.evidence[e.Seq] {
			o.effects.routine++
			continue
		}
		o.effects.add(effectKey(e), i, b.effectRank(e))
	}
}

// routineRead reports whether e is a read every program makes as it is
// loaded: the dynamic loader's cache and shared libraries, locale and
// character set data. Forty of them open every process span and say
// nothing of what the process did; they are counted
// (polygraph.effects_routine), not sent.
func routineRead(e *event.Event) bool {
	if e.Kind != event.KindOpen || e.IsWrite() {
		return false
	}
	p := e.Path
	switch {
	case p == "/etc/ld.so.cache", p == "/usr/lib/locale/locale-archive", p == "/usr/share/locale/locale.alias":
		return true
	case strings.HasPrefix(p, "/usr/lib/locale/"), strings.HasPrefix(p, "/usr/share/locale/"),
		strings.HasPrefix(p, "/usr/lib/x86_64-linux-gnu/gconv/"), strings.HasPrefix(p, "/usr/lib/aarch64-linux-gnu/gconv/"):
		return true
	}
	for _, d := range libDirs {
		if strings.HasPrefix(p, d) {
			base := path.Base(p)
			return strings.HasSuffix(base, ".so") || strings.Contains(base, ".so.")
		}
	}
	return false
}

// libDirs are where the dynamic loader finds shared libraries.
var libDirs = []string{"/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/", "/usr/local/lib/"}

// effectKey identifies an effect among those of its span: the same file
// opened the same way, the same peer, is one effect.
func effectKey(e *event.Event) string {
	k := string(e.Kind) + "|" + e.Path + "|" + e.Path2 + "|" + e.Access
	if e.Failed() {
		k += "|" + strconv.FormatInt(*e.Result, 10)
	}
	if e.Network != nil {
		k += "|" + e.Addr() + "|" + strconv.Itoa(int(e.Port())) + "|" + e.QName()
	}
	if e.Call != nil {
		k += "|" + e.Method() + "|" + strconv.Itoa(int(e.TargetPID()))
	}
	return k + "|" + e.ExecID
}

// effectRank orders effects for the cut: evidence first, then what
// changes or reaches out, then reads, then failed attempts.
func (b *builder) effectRank(e *event.Event) int {
	switch {
	case b.evidence[e.Seq]:
		return 0
	case e.Failed():
		return 3
	case e.Kind == event.KindOpen && !e.IsWrite():
		return 2
	}
	return 1
}

// writeEffects adds the chosen effects of o as span events, in seq
// order, and says what was cut.
func (b *builder) writeEffects(o *spanOut) {
	list := o.effects.list
	m := o.span.Attributes()
	putInt(m, attrRoutine, int64(o.effects.routine))
	if len(list) == 0 {
		return
	}
	m.PutInt(attrEffects, int64(len(list)))
	if len(list) > MaxEffects {
		sort.SliceStable(list, func(i, j int) bool { return list[i].rank < list[j].rank })
		m.PutInt(attrEffectsCapped, int64(len(list)-MaxEffects))
		o.span.SetDroppedEventsCount(uint32(len(list) - MaxEffects))
		list = list[:MaxEffects]
		sort.Slice(list, func(i, j int) bool { return list[i].i < list[j].i })
	}
	evs := o.span.Events()
	evs.EnsureCapacity(len(list) + evs.Len())
	for _, f := range list {
		b.effectEvent(evs.AppendEmpty(), o, f)
	}
}

// effectEvent fills one span event from effect f.
func (b *builder) effectEvent(se ptrace.SpanEvent, o *spanOut, f effect) {
	e := b.evs[f.i]
	se.SetName("polygraph." + string(e.Kind))
	se.SetTimestamp(pcommon.NewTimestampFromTime(e.TS))
	m := se.Attributes()
	m.PutInt(attrSeq, int64(e.Seq))
	if f.n > 1 {
		m.PutInt(attrCount, int64(f.n))
	}
	if o.group == rootGroup && b.ats.At(f.i).ToolCallID != "" {
		// A call's effect recorded after the call's span left.
		putID(m, attrToolCallID, b.ats.At(f.i).ToolCallID)
		putID(m, attrExecID, e.ExecID)
	}
	if at := b.ats.At(f.i); at.Reason == correlate.ReasonInProcess || at.AfterReturn || o.group == rootGroup {
		// The span's own basis does not cover this event: say its own.
		b.attribution(m, b.ats, f.i)
	}
	if o.group == rootGroup && b.tree != nil {
		if im := b.tree.Image(e.ExecID); im == nil || im.Exec == nil {
			m.PutInt(attrPID, int64(e.PID))
		}
	}
	putStr(m, attrFilePath, e.Path)
	putStr(m, attrPath2, e.Path2)
	putID(m, attrAccess, e.Access)
	putStr(m, attrRequested, e.PathRequested())
	putID(m, attrPathDiffers, e.PathDiffers())
	if e.Result != nil && *e.Result < 0 {
		m.PutInt(attrResult, *e.Result)
	}
	putID(m, attrVia, e.Via())
	if e.Network != nil {
		putStr(m, attrPeerAddr, e.Addr())
		if p := e.Port(); p != 0 {
			m.PutInt(attrPeerPort, int64(p))
		}
		putID(m, attrTransport, transport(e))
		putID(m, attrNetType, netType(e.Family()))
		putStr(m, attrServerAddr, e.Host())
		putStr(m, attrDNSName, e.QName())
		putID(m, attrDNSType, e.QType())
		putInt(m, attrBytesSent, int64(e.BytesSent()))
		putInt(m, attrBytesRecv, int64(e.BytesRecv()))
	}
	if e.Call != nil {
		putID(m, attrMethod, e.Method())
		putInt(m, attrTargetPID, int64(e.TargetPID()))
		putStr(m, attrTargetExe, e.TargetExe())
		putInt(m, attrSigno, int64(e.Signo()))
		putID(m, attrBPFCmd, e.BPFCmd())
	}
}

// transport is network.transport's value for an event.
func transport(e *event.Event) string {
	if e.Family() == "unix" {
		return "unix"
	}
	return e.Proto()
}

// netType is network.type's value for an address family.
func netType(family string) string {
	switch family {
	case "ipv4", "ipv6":
		return family
	}
	return ""
}
