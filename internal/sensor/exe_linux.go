package sensor

import (
	"os"
	"strconv"
)

// procExe returns the executable of process pid, read from /proc/PID/exe
// when its event is decoded, or "" once the process is gone. Read after
// the fact, it names the image the process runs then (a later exec shows
// the newer program).
func procExe(pid uint32) string {
	p, err := os.Readlink("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/exe")
	if err != nil {
		return ""
	}
	return p
}
