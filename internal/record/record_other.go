//go:build !linux

package record

import "context"

// Record needs the kernel sensor, which only Linux has.
func Record(ctx context.Context, o Options) (*Result, error) { return nil, ErrNeedsLinux }
