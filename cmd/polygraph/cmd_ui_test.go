package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestRunUI: ui serves the store until its context ends, saying where;
// off loopback the URL it prints carries the token it made up.
func TestRunUI(t *testing.T) {
	t.Setenv("POLYGRAPH_HOME", t.TempDir())
	t.Setenv("POLYGRAPH_UI_TOKEN", "")
	for _, c := range []struct{ listen, want string }{
		{"127.0.0.1:0", "at http://127.0.0.1:"},
		{"0.0.0.0:0", "/?token="},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		var out bytes.Buffer
		err := runUI(ctx, &uiOptions{listen: c.listen}, &out)
		cancel()
		if err != nil || !strings.Contains(out.String(), c.want) {
			t.Errorf("ui --listen %s: %v, printed %q", c.listen, err, out.String())
		}
	}
	if err := runUI(context.Background(), &uiOptions{listen: "no-port"}, &bytes.Buffer{}); err == nil {
		t.Error("a listen address without a port is accepted")
	}
}
