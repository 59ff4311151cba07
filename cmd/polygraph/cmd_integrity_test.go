package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/integrity"
)

func TestIntegrityPinListCheck(t *testing.T) {
	t.Setenv("POLYGRAPH_HOME", t.TempDir())
	bin := filepath.Join(t.TempDir(), "tool")
	b, err := os.ReadFile("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runIntegrityPin([]string{bin}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "pinned ") || !strings.HasSuffix(out.String(), " "+bin+"\n") {
		t.Errorf("pin printed %q", out.String())
	}

	out.Reset()
	if err := runIntegrityList(&integrityOptions{json: true}, &out); err != nil {
		t.Fatal(err)
	}
	var row pinRow
	if err := json.Unmarshal(out.Bytes(), &row); err != nil {
		t.Fatalf("list --json %q: %v", out.String(), err)
	}
	if row.Path != bin || row.Size != int64(len(b)) || len(row.SHA256) != 64 {
		t.Errorf("list --json row %+v", row)
	}

	if err := os.WriteFile(bin, append(b, 0), 0o755); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := runIntegrityCheck(context.Background(), &integrityOptions{json: true}, []string{bin}, &out); err != nil {
		t.Fatal(err)
	}
	var v integrity.Verdict
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatalf("check --json %q: %v", out.String(), err)
	}
	if v.Status != integrity.Modified || v.Source != integrity.SourcePin || v.Expected != row.SHA256 {
		t.Errorf("check after change: %+v, want modified against pin %s", v, row.SHA256)
	}

	out.Reset()
	if err := runIntegrityUnpin([]string{bin}, &out); err != nil || out.String() != "unpinned "+bin+"\n" {
		t.Errorf("unpin: %q, %v", out.String(), err)
	}
	if err := runIntegrityUnpin([]string{bin}, &out); err == nil {
		t.Error("unpinning an unpinned path succeeded")
	}
}
