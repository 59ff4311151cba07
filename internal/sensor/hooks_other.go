//go:build !linux

package sensor

import "errors"

// HookReport says the sensor runs on no hooks here: recording needs Linux.
func HookReport() (string, error) {
	return "", errors.New("recording needs Linux")
}
