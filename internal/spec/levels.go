package spec

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ctrbench/ctrbench/internal/platform"
	"github.com/ctrbench/ctrbench/internal/vocab"
)

// A levelCheck validates one level of factor name (the name as the file
// spells it, qualifier included) and returns its canonical form.
type levelCheck func(name, level string, wls []Workload, m Machine) (string, error)

// wholeChecks check the factors that take no role qualifier; baseChecks
// the placement factors, by their unqualified name.
var wholeChecks, baseChecks map[string]levelCheck

func init() {
	wholeChecks = map[string]levelCheck{
		vocab.FHosts: checkCount(vocab.MaxHosts), vocab.FPairs: checkCount(vocab.MaxPairs), vocab.FInstances: checkCount(vocab.MaxInstances),
		vocab.FUnderlay:    checkUnderlay,
		vocab.FPackaging:   checkOneOf(func() []string { return vocab.Packagings }),
		vocab.FPinning:     checkOneOf(func() []string { return vocab.Strings(vocab.Pinnings) }),
		vocab.FNeighbour:   checkNeighbour,
		vocab.FMachineCPUs: checkCPUs,
	}
	baseChecks = map[string]levelCheck{
		vocab.FPlatform:    checkOneOf(platform.Names),
		vocab.FNetwork:     checkOneOf(func() []string { return vocab.Strings(vocab.Networks) }),
		vocab.FCPUs:        checkCPUs,
		vocab.FCpuset:      checkCpuset,
		vocab.FStorage:     checkOneOf(func() []string { return vocab.Strings(vocab.Storages) }),
		vocab.FHost:        checkHost,
		vocab.FNode:        checkNode,
		vocab.FBlkioWeight: checkBlkioWeight,
		vocab.FReadBps:     checkBps,
		vocab.FWriteBps:    checkBps,
		vocab.FMemory:      checkMemory,
		vocab.FPids:        checkPids,
	}
}

// checkLevel validates one level of a factor and returns its canonical form.
func checkLevel(name, level string, wls []Workload, m Machine) (string, error) {
	if strings.HasPrefix(name, vocab.ParamPrefix) {
		return checkParamLevel(name, level, wls)
	}
	if d, f, ok := platform.FactorOf(name); ok {
		v, err := f.Check(level)
		if err != nil {
			return "", fmt.Errorf("level %q of %s (platform %s): %v", level, name, d.Name, err)
		}
		return v, nil
	}
	if check, ok := wholeChecks[name]; ok {
		return check(name, level, wls, m)
	}
	_, base := splitFactor(name)
	if check, ok := baseChecks[base]; ok {
		return check(name, level, wls, m)
	}
	return "", fmt.Errorf("unknown factor %q", name)
}

// checkParamLevel checks a workload parameter's level against every
// workload of the file that has the parameter. Levels keep the user's
// spelling, which reads better in reports ("64KiB" rather than "65536").
func checkParamLevel(name, level string, wls []Workload) (string, error) {
	p := strings.TrimPrefix(name, vocab.ParamPrefix)
	for _, w := range wls {
		if w.Spec == nil {
			continue
		}
		if prm, ok := w.Spec.Param(p); ok {
			if _, err := prm.Normalize(level); err != nil {
				return "", fmt.Errorf("level of %s: %v", name, err)
			}
		}
	}
	return level, nil
}

// checkCount is a whole number from 1 to max (hosts, pairs, instances).
func checkCount(max int) levelCheck {
	return func(name, level string, _ []Workload, _ Machine) (string, error) {
		n, err := strconv.Atoi(level)
		if err != nil || n < 1 || n > max {
			return "", fmt.Errorf("level %q of %s: want a whole number from 1 to %d", level, name, max)
		}
		return strconv.Itoa(n), nil
	}
}

// checkOneOf is one of a list of words, read when checked (platforms
// register themselves in init).
func checkOneOf(allowed func() []string) levelCheck {
	return func(name, level string, _ []Workload, _ Machine) (string, error) {
		return level, oneOf(name, level, allowed())
	}
}

func checkUnderlay(name, level string, _ []Workload, _ Machine) (string, error) {
	if _, err := vocab.ParseUnderlay(level); err != nil {
		return "", fmt.Errorf("level %q of %s: want %s, a rate such as 100mbit or 1gbit (tc's units: kbit, mbit, gbit in bits, kbps, mbps, gbps in bytes), then any of delay D, jitter D, loss P%% (or the mapping {rate: 1gbit, delay: 24ms, jitter: 2ms, loss: 0.1%%}): %v", level, name, vocab.NoLimit, err)
	}
	return level, nil
}

// checkNeighbour is none, idle, or workloads of the file joined by "+".
func checkNeighbour(name, level string, wls []Workload, _ Machine) (string, error) {
	if level == vocab.NeighbourNone || level == vocab.NeighbourIdle {
		return level, nil
	}
	for _, a := range vocab.NeighboursOf(level) {
		found := false
		for _, w := range wls {
			found = found || w.Name == a
		}
		if !found {
			names := []string{vocab.NeighbourNone, vocab.NeighbourIdle}
			for _, w := range wls {
				names = append(names, w.Name)
			}
			return "", fmt.Errorf("level %q of %s: %q is not a workload of this file; allowed: %s, or several joined by +", level, name, a, strings.Join(names, ", "))
		}
	}
	return level, nil
}

func checkCPUs(name, level string, _ []Workload, m Machine) (string, error) {
	if level == vocab.NoLimit {
		return level, nil
	}
	f, err := strconv.ParseFloat(level, 64)
	if err != nil || f <= 0 {
		return "", fmt.Errorf("level %q of %s: want %s or a positive number of cores such as 0.5 or 1", level, name, vocab.NoLimit)
	}
	if m.CPUs > 0 && f > float64(m.CPUs) {
		return "", fmt.Errorf("level %q of %s: this machine has only %d cores", level, name, m.CPUs)
	}
	return level, nil
}

func checkCpuset(name, level string, _ []Workload, m Machine) (string, error) {
	if level == vocab.NoLimit {
		return level, nil
	}
	if _, err := parseCPUList(level, m.CPUs); err != nil {
		return "", fmt.Errorf("level %q of %s: %v", level, name, err)
	}
	return level, nil
}

func checkHost(name, level string, _ []Workload, _ Machine) (string, error) {
	n, err := strconv.Atoi(level)
	if err != nil || n < 1 || n > vocab.MaxHosts {
		return "", fmt.Errorf("level %q of %s: want an emulated host's number, 1 to %d (within the cell's hosts)", level, name, vocab.MaxHosts)
	}
	return strconv.Itoa(n), nil
}

func checkNode(name, level string, _ []Workload, _ Machine) (string, error) {
	if !nodeRE.MatchString(level) {
		return "", fmt.Errorf("level %q of %s: want a cluster node's hostname, or key=value for a node carrying that label (letters, digits, '.', '_', '-')", level, name)
	}
	return level, nil
}

func checkBlkioWeight(name, level string, _ []Workload, m Machine) (string, error) {
	if level == vocab.NoLimit {
		return level, nil
	}
	w, err := strconv.Atoi(level)
	if err != nil || w < 10 || w > 1000 {
		return "", fmt.Errorf("level %q of %s: want %s or a weight from 10 to 1000", level, name, vocab.NoLimit)
	}
	if m.NoBlkioWeight {
		return "", fmt.Errorf("level %q of %s: this kernel has no proportional block I/O weight (no blkio.weight or blkio.bfq.weight: its I/O scheduler does not do cgroup weights); allowed here: %s; %s and %s (throttles) work", level, name, vocab.NoLimit, vocab.FReadBps, vocab.FWriteBps)
	}
	return level, nil
}

// minPids leaves room for the agent's own threads (the Go runtime's,
// about ten) and a workload's first processes.
const minPids = 32

// checkPids is a cap on an instance's processes and threads.
func checkPids(name, level string, _ []Workload, _ Machine) (string, error) {
	if level == vocab.NoLimit {
		return level, nil
	}
	n, err := strconv.Atoi(level)
	if err != nil || n < minPids || n > 4194304 {
		return "", fmt.Errorf("level %q of %s: want %s or a number of processes from %d (the agent's own threads need room) to 4194304", level, name, vocab.NoLimit, minPids)
	}
	return strconv.Itoa(n), nil
}

// checkBps is a block I/O throttle: bytes per second, at least 1 MiB.
func checkBps(name, level string, _ []Workload, _ Machine) (string, error) {
	if level == vocab.NoLimit {
		return level, nil
	}
	n, err := vocab.ParseSize(level)
	if err != nil || n < 1<<20 {
		return "", fmt.Errorf("level %q of %s: want %s or bytes per second of at least 1MiB, such as 50MiB", level, name, vocab.NoLimit)
	}
	return level, nil
}

func checkMemory(name, level string, _ []Workload, m Machine) (string, error) {
	if level == vocab.NoLimit {
		return level, nil
	}
	n, err := vocab.ParseSize(level)
	if err != nil {
		return "", fmt.Errorf("level %q of %s: want %s or a size such as 512MiB or 2GiB", level, name, vocab.NoLimit)
	}
	// Docker refuses less than 6 MiB; an agent needs more than that anyway.
	if n < 6<<20 {
		return "", fmt.Errorf("level %q of %s: at least 6MiB", level, name)
	}
	if m.MemBytes > 0 && n > vocab.Size(m.MemBytes) {
		return "", fmt.Errorf("level %q of %s: larger than this machine's memory (%s)", level, name, vocab.Size(m.MemBytes))
	}
	return level, nil
}

func oneOf(name, level string, allowed []string) error {
	for _, a := range allowed {
		if a == level {
			return nil
		}
	}
	return fmt.Errorf("level %q of %s: allowed: %s", level, name, strings.Join(allowed, ", "))
}
