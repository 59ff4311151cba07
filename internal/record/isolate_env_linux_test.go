package record

import "testing"

func TestWithoutJobserver(t *testing.T) {
	for in, want := range map[string]string{
		" -j4 --jobserver-auth=fifo:/tmp/GMfifo123": "-j4",
		"-j --jobserver-fds=3,4 -k":                 "-j -k",
		"s -- X=1":                                  "s -- X=1",
		"":                                          "",
	} {
		if got := withoutJobserver(in); got != want {
			t.Errorf("withoutJobserver(%q) = %q, want %q", in, got, want)
		}
	}
}
