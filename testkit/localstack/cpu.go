package localstack

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ProcessCPU is a live process's CPU time so far (user + system, from
// /proc/PID/stat); pid "self" is the caller.
func ProcessCPU(pid string) (time.Duration, error) {
	return procCPU(pid, false)
}

// MariaDBCPU is the CPU time so far of `make up`'s mariadbd (one process).
func MariaDBCPU() (time.Duration, error) { return pidFileCPU(MariaDBPidFile) }

// pidFileCPU is the CPU time so far of the live process whose pid the
// file holds.
func pidFileCPU(file string) (time.Duration, error) {
	pid, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	return procCPU(strings.TrimSpace(string(pid)), false)
}

// KafkaCPU is the CPU time so far of `make up`'s running Kafka nodes,
// summed (a node that stopped meanwhile no longer counts).
func KafkaCPU() (time.Duration, error) {
	files, err := filepath.Glob(KafkaPidFiles)
	if err != nil {
		return 0, err
	}
	var total time.Duration
	running := 0
	for _, f := range files {
		if cpu, err := pidFileCPU(f); err == nil { // a node stopping removes its file
			total += cpu
			running++
		}
	}
	if running == 0 {
		return 0, fmt.Errorf("no running Kafka node has a pid file matching %s", KafkaPidFiles)
	}
	return total, nil
}

// PostgresCPU is the CPU time so far of `make up`'s PostgreSQL, which runs
// a process per connection: the postmaster's own, its exited children's
// (added to the postmaster's once reaped) and its live children's.
func PostgresCPU() (time.Duration, error) {
	head, err := os.ReadFile(PostgresPidFile)
	if err != nil {
		return 0, err
	}
	postmaster, _, _ := strings.Cut(string(head), "\n")
	total, err := procCPU(postmaster, true)
	if err != nil {
		return 0, err
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, p := range procs {
		if fields, err := procStat(p.Name()); err == nil && fields[1] == postmaster {
			if cpu, err := procCPU(p.Name(), false); err == nil {
				total += cpu // a child that exited meanwhile is in the next reading's total
			}
		}
	}
	return total, nil
}

// ticksPerSecond is USER_HZ, the unit of /proc/PID/stat's times on Linux.
const ticksPerSecond = 100

// procCPU is utime + stime of /proc/PID/stat, plus the reaped children's
// cutime + cstime with reaped.
func procCPU(pid string, reaped bool) (time.Duration, error) {
	fields, err := procStat(pid)
	if err != nil {
		return 0, err
	}
	times := fields[11:13]
	if reaped {
		times = fields[11:15]
	}
	var ticks int64
	for _, f := range times {
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%s/stat: %w", pid, err)
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / ticksPerSecond, nil
}

// procStat is the fields of /proc/PID/stat after the command name (which
// may hold spaces and is closed by ')'): state, ppid, ..., utime and stime
// (fields[11:13]), cutime and cstime (fields[13:15]).
func procStat(pid string) ([]string, error) {
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return nil, err
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(fields) < 15 {
		return nil, fmt.Errorf("/proc/%s/stat: %d fields after the command", pid, len(fields))
	}
	return fields, nil
}
