// saver.go -- a config saver in Go, for torture --target exec: each put
// writes the value to cfg.tmp, syncs it, renames it over cfg and syncs the
// directory, then acknowledges it.  Go makes its system calls itself, not
// through libc, so the LD_PRELOAD shim sees none of them, whichever way the
// program is linked (with cgo: dynamic, the shim loads and sees nothing;
// without: static, the shim cannot load).
//
//	saver DIR full|nodirsync|nofsync   the workload
//	saver DIR --check                  the checker: prints "cfg VALUE"
//
// nodirsync leaves the directory sync out, nofsync every sync: both lose
// acknowledged puts at a power cut under --fs posix.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

func check(dir string) {
	b, err := os.ReadFile(filepath.Join(dir, "cfg"))
	if err != nil {
		if os.IsNotExist(err) {
			return
		}
		fmt.Fprintln(os.Stderr, "saver:", err)
		os.Exit(1)
	}
	if len(b) > 0 {
		fmt.Printf("cfg %s\n", b)
	}
}

func put(dir, val, mode string) error {
	tmp := filepath.Join(dir, "cfg.tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0644)
	if err != nil {
		return err
	}
	if _, err = f.WriteString(val); err == nil && mode != "nofsync" {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err = os.Rename(tmp, filepath.Join(dir, "cfg")); err != nil {
		return err
	}
	if mode != "full" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	d.Close()
	return err
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: saver DIR full|nodirsync|nofsync | saver DIR --check")
		os.Exit(2)
	}
	dir, mode := os.Args[1], os.Args[2]
	if mode == "--check" {
		check(dir)
		return
	}
	fd, err := strconv.Atoi(os.Getenv("KEEL_TORTURE_FD"))
	if err != nil || (mode != "full" && mode != "nodirsync" && mode != "nofsync") {
		fmt.Fprintln(os.Stderr, "saver: run me under torture --target exec with a mode")
		os.Exit(2)
	}
	proto := os.NewFile(uintptr(fd), "protocol")
	for i := 1; i <= 1000000; i++ {
		v := "v" + strconv.Itoa(i)
		fmt.Fprintf(proto, "intent %d cfg %s\n", i, v)
		if err := put(dir, v, mode); err != nil {
			fmt.Fprintln(os.Stderr, "saver:", err)
			os.Exit(1)
		}
		fmt.Fprintf(proto, "ack %d\n", i)
	}
}
