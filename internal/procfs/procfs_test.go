package procfs

import (
	"os"
	"testing"
)

func TestParseStat(t *testing.T) {
	line := "4242 (a) b) (c) S 1 4242 4242 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 1 0 123456 1000 200 18446744073709551615\n"
	st, err := ParseStat(4242, []byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if st.Comm != "a) b) (c" || st.State != 'S' || st.PPID != 1 || st.UTimeTicks != 7 || st.STimeTicks != 3 || st.StartTicks != 123456 {
		t.Errorf("ParseStat = %+v", st)
	}
	for _, bad := range []string{"", "1 (x", "1 (x) S 1", "1 (x) S notanumber 1 1 0 -1 1 1 0 0 0 7 3 0 0 20 0 1 0 1 1 1"} {
		if _, err := ParseStat(1, []byte(bad)); err == nil {
			t.Errorf("ParseStat(%q) accepted", bad)
		}
	}
}

func TestOwnProcess(t *testing.T) {
	st, err := ReadStat(os.Getpid())
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	if st.PPID != os.Getppid() || st.StartTicks == 0 {
		t.Errorf("own stat %+v, ppid want %d", st, os.Getppid())
	}
	if Gone(os.Getpid()) {
		t.Error("this process reads as gone")
	}
	if d := ReadTable().Descendants(os.Getppid()); len(d) < 2 {
		t.Errorf("the parent's descendants %v miss this process", d)
	}
}
