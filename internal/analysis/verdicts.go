package analysis

import (
	"encoding/json"
	"log/slog"

	"github.com/polygraph/polygraph/internal/integrity"
	"github.com/polygraph/polygraph/internal/report"
	"github.com/polygraph/polygraph/internal/session"
)

// execResults turns the verdict rows of a session into one integrity
// Result per exec, in the order the rows come (by exec id). A row whose
// JSON does not decode keeps what its columns say.
func execResults(rows []session.Verdict) []integrity.Result {
	var out []integrity.Result
	at := map[string]int{}
	for _, row := range rows {
		var v integrity.Verdict
		if err := json.Unmarshal(row.Data, &v); err != nil {
			slog.Debug("analysis: undecodable exec verdict", "exec_id", row.ExecID, "error", err)
			v = integrity.Verdict{Path: row.Path, SHA256: row.SHA256, Status: integrity.Status(row.Status)}
		}
		v.Role = integrity.Role(row.Role)
		i, ok := at[row.ExecID]
		if !ok {
			i = len(out)
			at[row.ExecID] = i
			out = append(out, integrity.Result{ExecID: row.ExecID})
		}
		if v.Role == integrity.RoleScript {
			out[i].Script = &v
		} else {
			out[i].Binary = v
		}
	}
	return out
}

// integrityViews is what the report shows of the verdicts, by exec id.
func integrityViews(rs []integrity.Result) map[string][]report.ExecIntegrity {
	if len(rs) == 0 {
		return nil
	}
	out := make(map[string][]report.ExecIntegrity, len(rs))
	for _, r := range rs {
		for _, v := range r.Verdicts() {
			if v.Path == "" {
				continue // no binary row for this exec
			}
			out[r.ExecID] = append(out[r.ExecID], report.ExecIntegrity{Path: v.Path, Role: string(v.Role), SHA256: v.SHA256,
				Verdict: string(v.Status), Source: string(v.Source), Package: v.Package, Of: v.Of, Expected: v.Expected, Reason: v.Reason})
		}
	}
	return out
}
