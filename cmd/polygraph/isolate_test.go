package main

import (
	"errors"
	"testing"
)

func TestIsolateFlags(t *testing.T) {
	for _, tt := range []struct {
		f       isolateFlags
		mem     int64
		usage   bool // a usage error
		isolate bool
	}{
		{f: isolateFlags{}},
		{f: isolateFlags{isolate: true}, isolate: true},
		{f: isolateFlags{isolate: true, limitMemory: "512M", limitPids: 64}, mem: 512 << 20, isolate: true},
		{f: isolateFlags{isolate: true, limitMemory: "2G"}, mem: 2 << 30, isolate: true},
		{f: isolateFlags{isolate: true, limitMemory: "4096"}, mem: 4096, isolate: true},
		{f: isolateFlags{limitPids: 10}, usage: true},
		{f: isolateFlags{isolate: true, limitMemory: "lots"}, usage: true},
		{f: isolateFlags{isolate: true, limitMemory: "-1M"}, usage: true},
		{f: isolateFlags{isolate: true, limitPids: -1}, usage: true},
	} {
		iso, err := tt.f.isolation(nil)
		var ue *usageError
		if got := errors.As(err, &ue); got != tt.usage {
			t.Errorf("%+v: error %v, want usage error %v", tt.f, err, tt.usage)
			continue
		}
		if (iso != nil) != tt.isolate || iso != nil && (iso.MemoryMax != tt.mem || iso.PidsMax != tt.f.limitPids) {
			t.Errorf("%+v: isolation %+v", tt.f, iso)
		}
	}
}
