package main

import (
	"github.com/spf13/cobra"

	"github.com/polygraph/polygraph/internal/sensor"
)

// ringFlag is --ring-size, of the verbs that load the sensor.
type ringFlag struct{ ringSize string }

func (f *ringFlag) addRingFlag(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.ringSize, "ring-size", "", "the kernel's event ring in MiB, a power of two (default: 4 per CPU, 8 to 64); raise it where 'lost' counts ring losses")
}

// ringBytes is the size asked for, 0 for the sensor's default.
func (f *ringFlag) ringBytes() (int, error) {
	if f.ringSize == "" {
		return 0, nil
	}
	n, err := sensor.ParseRingSize(f.ringSize)
	if err != nil {
		return 0, &usageError{err}
	}
	return n, nil
}
