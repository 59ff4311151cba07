//go:build !linux

package watch

import (
	"context"
	"os"
)

// fileID has no meaning without the sensor.
func fileID(os.FileInfo) (dev, ino uint64) { return 0, 0 }

// Run needs the kernel sensor.
func Run(context.Context, Options) error { return ErrNeedsLinux }
