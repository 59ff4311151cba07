// Package human writes numbers the way a person reads them: a count with
// its noun in the right number ("1 process", "3 processes") and a byte
// size in binary units ("525.8 KiB", not "538413 B"). Every text rendering
// uses it, so one report never says "1 processes" beside "2 files".
package human

import "fmt"

// Count is n with the noun for one or many: Count(1, "process",
// "processes") is "1 process", Count(0, ...) "0 processes".
func Count[N ~int | ~int64 | ~uint64 | ~uint32](n N, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Bytes is a byte count in binary units, one decimal past the first unit:
// "0 B", "1023 B", "1.0 KiB", "525.8 KiB", "3.2 GiB".
func Bytes[N ~int | ~int64 | ~uint64](n N) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v := float64(n)
	div, exp := float64(unit), 0
	for v/div >= unit && exp < 5 {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", v/div, "KMGTPE"[exp])
}
