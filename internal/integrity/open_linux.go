package integrity

import (
	"os"
	"strconv"
	"strings"
)

// openImage opens the file pid executes, through /proc/PID/exe while that
// still is the image at path: that handle reaches the bytes the kernel
// mapped even if path has since been replaced or deleted. When pid is
// gone, or has exec'd something else since, it opens path instead.
func openImage(pid uint32, path string) (*os.File, Via, error) {
	if pid != 0 {
		exe := "/proc/" + strconv.FormatUint(uint64(pid), 10) + "/exe"
		if f, err := os.Open(exe); err == nil {
			// Read the link after opening: an exec in between shows up
			// as a mismatch rather than as the wrong file.
			if link, err := os.Readlink(exe); err == nil && samePath(link, path, f) {
				return f, ViaProcExe, nil
			}
			f.Close()
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, ViaPath, err
	}
	return f, ViaPath, nil
}

// samePath reports whether the /proc/PID/exe link names path: the same
// string (with the kernel's " (deleted)" suffix for an unlinked file), or
// a path that is the same file as the open handle.
func samePath(link, path string, f *os.File) bool {
	if link == path || strings.TrimSuffix(link, " (deleted)") == path {
		return true
	}
	pi, err := os.Stat(path)
	if err != nil {
		return false
	}
	fi, err := f.Stat()
	return err == nil && os.SameFile(pi, fi)
}

// procCwd is the working directory of a live pid, for a request that came
// without one.
func procCwd(pid uint32) string {
	if pid == 0 {
		return ""
	}
	d, err := os.Readlink("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/cwd")
	if err != nil {
		return ""
	}
	return d
}
