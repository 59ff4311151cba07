package detect

// What a rule reads of the findings of the rules it Needs (Rule.Needs):
// one function per question, here, so no rule reads another rule's
// findings its own way.

// supersededExecs are the execs remote-code-exec's findings are about:
// the rules it supersedes skip them.
func supersededExecs(needs map[string][]Finding) map[uint64]bool {
	out := map[uint64]bool{}
	for _, f := range needs["remote-code-exec"] {
		for _, seq := range f.execs {
			out[seq] = true
		}
	}
	return out
}

// firstSecretRead returns the seq of the first read that made a finding
// of medium severity or more among the findings needs (those of
// sensitive-read and agent-config-read, as found, before any severity
// override); ok is false when there is none. A finding's evidence starts
// with its first read.
func firstSecretRead(needs map[string][]Finding) (seq uint64, ok bool) {
	for _, fs := range needs {
		for _, f := range fs {
			if f.Severity.Rank() < SeverityMedium.Rank() || len(f.Evidence) == 0 {
				continue
			}
			if !ok || f.Evidence[0] < seq {
				seq, ok = f.Evidence[0], true
			}
		}
	}
	return seq, ok
}

// secretReadSeqs returns the seqs of the evidence of every finding of
// medium severity or more among the findings needs (sensitive-read and
// agent-config-read): the reads of secrets.
func secretReadSeqs(needs map[string][]Finding) map[uint64]bool {
	out := map[uint64]bool{}
	for _, fs := range needs {
		for _, f := range fs {
			if f.Severity.Rank() < SeverityMedium.Rank() {
				continue
			}
			for _, seq := range f.Evidence {
				out[seq] = true
			}
		}
	}
	return out
}
