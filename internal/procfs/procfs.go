// Package procfs is polygraph's one reader of /proc/PID/stat and the
// process table: the parent, state, start time and CPU of a process, and
// who is whose child; and what /proc says of descriptors (fds.go): who
// listens on a TCP address, who holds a file or a socket, a cgroup.
// Everything else that asks /proc about a process (the recorder, attach,
// watch, the sensor's tracking, the session's writer id, the bench) asks
// here, so the format's traps (a comm holding spaces or ')') are handled
// once.
package procfs

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// Stat is what /proc/PID/stat says of a process.
type Stat struct {
	PID   int
	Comm  string
	State byte // R, S, D, Z, X, ...
	PPID  int
	// UTimeTicks and STimeTicks are the CPU the process used, in clock
	// ticks (TicksPerSecond); StartTicks is when it started, in clock
	// ticks since boot.
	UTimeTicks, STimeTicks uint64
	StartTicks             uint64
}

// TicksPerSecond is USER_HZ, which is 100 on every Linux ABI.
const TicksPerSecond = 100

// ReadStat reads /proc/PID/stat.
func ReadStat(pid int) (Stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, err
	}
	return ParseStat(pid, b)
}

// ParseStat parses the contents of /proc/PID/stat. The comm (field 2) is
// in parentheses and may itself hold spaces and ')': it ends at the last
// ')'.
func ParseStat(pid int, b []byte) (Stat, error) {
	bad := fmt.Errorf("parse /proc/%d/stat", pid)
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return Stat{}, bad
	}
	st := Stat{PID: pid, Comm: string(b[open+1 : end])}
	f := bytes.Fields(b[end+1:])
	// f[0] is field 3 (state); field N is f[N-3].
	if len(f) < 20 || len(f[0]) != 1 {
		return Stat{}, bad
	}
	st.State = f[0][0]
	var err error
	num := func(field int) uint64 {
		n, e := strconv.ParseUint(string(f[field-3]), 10, 64)
		if e != nil {
			err = bad
		}
		return n
	}
	st.PPID = int(num(4))
	st.UTimeTicks, st.STimeTicks = num(14), num(15)
	st.StartTicks = num(22)
	if err != nil {
		return Stat{}, err
	}
	return st, nil
}

// Gone reports whether pid has exited: no /proc entry, or a zombie.
func Gone(pid int) bool {
	st, err := ReadStat(pid)
	return err != nil || st.State == 'Z' || st.State == 'X'
}

// StartTimeNS is pid's start time in ns since boot (the image id of a
// process that has not exec'd since polygraph saw it).
func StartTimeNS(pid int) (uint64, error) {
	st, err := ReadStat(pid)
	if err != nil {
		return 0, err
	}
	return st.StartTicks * (1e9 / TicksPerSecond), nil
}

// CPUNS is pid's user and system CPU time in ns, all threads.
func CPUNS(pid int) (int64, error) {
	st, err := ReadStat(pid)
	if err != nil {
		return 0, err
	}
	return int64(st.UTimeTicks+st.STimeTicks) * (1e9 / TicksPerSecond), nil
}

// Table lists every process's parent, and every parent's children, as
// /proc shows them now.
type Table struct {
	Parent   map[int]int
	Children map[int][]int
}

// ReadTable reads the process table.
func ReadTable() Table {
	t := Table{Parent: map[int]int{}, Children: map[int][]int{}}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := ReadStat(pid)
		if err != nil {
			continue
		}
		t.Parent[pid] = st.PPID
		t.Children[st.PPID] = append(t.Children[st.PPID], pid)
	}
	return t
}

// Descendants returns root and every process below it.
func (t Table) Descendants(root int) []int {
	out := []int{root}
	for i := 0; i < len(out); i++ {
		out = append(out, t.Children[out[i]]...)
	}
	return out
}
