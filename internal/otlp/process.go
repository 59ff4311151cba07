package otlp

import (
	"path"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/lineage"
)

// processSpans adds a span for every exec image of a tool call (or of
// nothing) that is ready and not sent: its call's span is out, and the
// image and the forks folded into it have ended.
func (b *builder) processSpans() {
	if b.tree == nil || b.ats == nil {
		return
	}
	for _, im := range b.tree.Images() {
		g := b.groups[im.Index]
		if g == "" || b.capped[im.Index] {
			continue
		}
		id := b.st.execID(im.ID)
		if b.sentOrSending(id) {
			continue
		}
		if !b.final && (g == rootGroup || !b.sentOrSending(b.groupSpan(g)) || !b.ready(im)) {
			continue
		}
		b.processSpan(im, g, id)
	}
}

// ended reports whether an image is over: it exec'd another program or
// its process exited.
func ended(im *lineage.Image) bool { return im.Exit != nil || len(im.Next) > 0 }

// ready reports whether an exec image's span can leave: it and every
// fork child folded into it (those that never exec'd) have ended.
func (b *builder) ready(im *lineage.Image) bool {
	if !ended(im) {
		return false
	}
	stack := append([]*lineage.Image(nil), im.Children...)
	for n := 0; len(stack) > 0 && n < len(b.tree.Images()); n++ {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if c.Exec != nil {
			continue // a span of its own
		}
		if !ended(c) {
			return false
		}
		stack = append(stack, c.Children...)
	}
	return true
}

// hostImage returns the exec image whose span carries the events of im:
// im itself, or the nearest exec'd ancestor of a fork that never exec'd.
func (b *builder) hostImage(im *lineage.Image) *lineage.Image {
	for n := 0; im != nil && n <= len(b.tree.Images()); n++ {
		if im.Exec != nil {
			return im
		}
		im = im.Parent
	}
	return nil
}

// parentSpan returns the span an exec image's span hangs under: the
// nearest exec'd ancestor of the same owner, or the owner's span.
func (b *builder) parentSpan(im *lineage.Image, g string) pcommon.SpanID {
	p := im.Parent
	for n := 0; p != nil && n <= len(b.tree.Images()); n++ {
		if p.Exec != nil {
			if b.groups[p.Index] != g {
				break
			}
			if !b.capped[p.Index] {
				return b.st.execID(p.ID)
			}
		}
		p = p.Parent
	}
	return b.groupSpan(g)
}

// processSpan adds the span of exec image im, owned by g.
func (b *builder) processSpan(im *lineage.Image, g string, id pcommon.SpanID) {
	x := im.Exec
	end, running := b.end, true
	switch {
	case im.Exit != nil:
		end, running = im.Exit.TS, false
	case len(im.Next) > 0 && im.Next[0].Exec != nil:
		end, running = im.Next[0].Exec.TS, false
	}
	name := path.Base(x.Path)
	if x.Path == "" {
		name = im.Comm
	}
	o := b.newSpan(id, b.parentSpan(im, g), "exec "+name, g, x.TS, end)
	m := o.span.Attributes()
	m.PutInt(attrPID, int64(x.PID))
	putInt(m, attrPPID, int64(x.PPID))
	putStr(m, attrExePath, x.Path)
	putStr(m, attrExeName, name)
	putClip(m, attrCmdLine, commandLine(x.Argv()))
	putStr(m, attrCwd, x.Cwd())
	if u := x.UID(); u != nil {
		m.PutInt(attrProcUID, int64(*u))
	}
	putStr(m, attrScript, x.Script())
	putBool(m, attrDeleted, x.Deleted())
	putID(m, attrExecID, im.ID)
	putID(m, attrParentExecID, im.ParentID)
	if g != rootGroup {
		putID(m, attrToolCallID, g)
	}
	b.attribution(m, b.ats, b.indexOf(x))
	b.integrity(m, im.ID, x)
	if running {
		putBool(m, attrLeftRunning, true)
	}
	if xe := im.Exit; xe != nil {
		if c := xe.ExitCode(); c != nil {
			m.PutInt(attrExitCode, int64(*c))
			if *c != 0 {
				o.span.Status().SetCode(ptrace.StatusCodeError)
				o.span.Status().SetMessage("exit " + strconv.Itoa(*c))
			}
		}
		if s := xe.Signal(); s != 0 {
			m.PutInt(attrSignal, int64(s))
			o.span.Status().SetCode(ptrace.StatusCodeError)
			o.span.Status().SetMessage("signal " + strconv.Itoa(s))
		}
		putInt(m, attrCPU, int64(xe.CPUNS()))
		putInt(m, attrMaxRSS, int64(xe.MaxRSSKB()))
		putInt(m, attrReadBytes, int64(xe.ReadBytes()))
		putInt(m, attrWriteBytes, int64(xe.WriteBytes()))
	}
}

// integrity puts the exec's integrity verdicts on m: the recorded
// verdict, else the hash the event carries.
func (b *builder) integrity(m pcommon.Map, execID string, x *event.Event) {
	r, ok := b.verdict[execID]
	if !ok {
		putID(m, attrSHA256, x.SHA256())
		putID(m, attrScriptSHA, x.ScriptSHA256())
		return
	}
	v := r.Binary
	putID(m, attrSHA256, firstNonEmpty(v.SHA256, x.SHA256()))
	putID(m, attrVerdict, string(v.Status))
	putID(m, attrVerdictSrc, string(v.Source))
	putStr(m, attrPackage, v.Package)
	if s := r.Script; s != nil {
		putID(m, attrScriptSHA, s.SHA256)
		putID(m, attrScriptVerd, string(s.Status))
	}
}

// commandLine joins an argv, masked, for process.command_line.
func commandLine(argv []string) string {
	return strings.Join(redactArgv(argv), " ")
}
