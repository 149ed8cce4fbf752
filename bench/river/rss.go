package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// rssMB returns this process's peak resident set size (VmHWM) and current one
// (VmRSS) in MiB, read from /proc/self/status; zeros where that file is not
// available (not Linux).
func rssMB() (peak, now float64) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "VmHWM" && key != "VmRSS") {
			continue
		}
		fields := strings.Fields(val) // e.g. "48152 kB"
		if len(fields) == 0 {
			continue
		}
		kb, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			continue
		}
		if key == "VmHWM" {
			peak = kb / 1024
		} else {
			now = kb / 1024
		}
	}
	return peak, now
}
