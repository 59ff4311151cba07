// Command storm is the red-team matrix's loss storm (test/redteam): it
// opens and closes a few files in tight loops on every CPU, N times in
// all, and while it does, at five evenly spaced points of the first
// loop, starts `cat SECRET` with its output to OUT.1 … OUT.5: five single
// reads of a secret inside a storm of noise. It waits for the five reads
// before it exits.
//
//	storm N SECRET OUT FILE...
package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"
)

func main() {
	if len(os.Args) < 5 {
		fmt.Fprintln(os.Stderr, "usage: storm N SECRET OUT FILE...")
		os.Exit(2)
	}
	n, err := strconv.Atoi(os.Args[1])
	if err != nil || n < 6 {
		fmt.Fprintln(os.Stderr, "storm: N must be a number of 6 or more")
		os.Exit(2)
	}
	secret, out, files := os.Args[2], os.Args[3], os.Args[4:]
	workers := runtime.NumCPU()
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			noise(files, n/workers, w)
		}()
	}
	// The first loop starts the reads as it goes.
	var reads []*exec.Cmd
	first := n - (workers-1)*(n/workers)
	next := 1
	for i := 0; i < first; i++ {
		if next <= 5 && i == first*next/6 {
			reads = append(reads, read(secret, fmt.Sprintf("%s.%d", out, next)))
			next++
		}
		open1(files[i%len(files)])
	}
	wg.Wait()
	failed := false
	for _, c := range reads {
		if err := c.Wait(); err != nil {
			fmt.Fprintln(os.Stderr, "storm: cat:", err)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

// noise opens and closes files n times, starting at the k-th.
func noise(files []string, n, k int) {
	for i := 0; i < n; i++ {
		open1(files[(i+k)%len(files)])
	}
}

func open1(path string) {
	if fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0); err == nil {
		syscall.Close(fd)
	}
}

// read starts `cat secret > out`.
func read(secret, out string) *exec.Cmd {
	f, err := os.Create(out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "storm:", err)
		os.Exit(1)
	}
	defer f.Close()
	c := exec.Command("/bin/cat", secret)
	c.Stdout = f
	if err := c.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "storm:", err)
		os.Exit(1)
	}
	return c
}
