package procs

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// unlimited is the smallest value of a cgroup v1 memory.limit_in_bytes that
// means no limit (the kernel writes the largest multiple of the page size
// below 1<<63 there).
const unlimited = 1 << 62

// memoryAvailable returns how many bytes the process may use: the lowest
// memory limit of its cgroup and of the cgroups above it (v2 memory.max,
// v1 memory.limit_in_bytes), or the machine's memory (MemTotal in
// /proc/meminfo) when that is lower or no cgroup limits it; 0 when none of
// them can be read. root is the file system root the paths hang from ("/",
// or a test's directory).
func memoryAvailable(root string) uint64 {
	best := machineMemory(filepath.Join(root, "proc/meminfo"))
	if c := cgroupMemoryLimit(root); c > 0 && (best == 0 || c < best) {
		best = c
	}
	return best
}

// machineMemory returns MemTotal from the meminfo file at path, in bytes,
// or 0.
func machineMemory(path string) uint64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kb, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				return 0
			}
			return kb * 1024
		}
	}
	return 0
}

// cgroupMemoryLimit returns the lowest memory limit on the path from the
// process's cgroup (as /proc/self/cgroup names it) up to the root of the
// cgroup file system, for cgroup v2 and for v1's memory controller, or 0 if
// nothing limits it. In a container with its own cgroup namespace the
// process's cgroup is "/", the container's, whose limit is at the root; when
// the named directory does not exist (the container sees its own cgroup at
// the mount point, under another name) the root's file alone is read.
func cgroupMemoryLimit(root string) uint64 {
	b, err := os.ReadFile(filepath.Join(root, "proc/self/cgroup"))
	if err != nil {
		return 0
	}
	var lowest uint64
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		// hierarchy-ID:controller-list:cgroup-path
		id, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		controllers, path, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		var mount, file string
		switch {
		case id == "0" && controllers == "": // v2, the unified hierarchy
			mount, file = "sys/fs/cgroup", "memory.max"
		case hasController(controllers, "memory"): // v1
			mount, file = "sys/fs/cgroup/memory", "memory.limit_in_bytes"
		default:
			continue
		}
		if l := lowestOnPath(filepath.Join(root, mount), path, file); l > 0 && (lowest == 0 || l < lowest) {
			lowest = l
		}
	}
	return lowest
}

func hasController(list, name string) bool {
	for c := range strings.SplitSeq(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// lowestOnPath returns the lowest limit in file in the directories from
// mount/cgroup up to mount, or 0 if none is set.
func lowestOnPath(mount, cgroup, file string) uint64 {
	dir := filepath.Join(mount, filepath.Clean("/"+cgroup))
	if _, err := os.Stat(dir); err != nil {
		dir = mount
	}
	var lowest uint64
	for {
		if l := readLimit(filepath.Join(dir, file)); l > 0 && (lowest == 0 || l < lowest) {
			lowest = l
		}
		if dir == mount || len(dir) < len(mount) {
			return lowest
		}
		dir = filepath.Dir(dir)
	}
}

// readLimit reads a cgroup memory limit file: a number of bytes, "max"
// (v2) or a huge number (v1) for no limit, which are returned as 0, like a
// missing file.
func readLimit(path string) uint64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n >= unlimited {
		return 0
	}
	return n
}
