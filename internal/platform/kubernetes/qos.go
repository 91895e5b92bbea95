package kubernetes

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/ctrbench/ctrbench/internal/platform"
)

// FQoS is the kubernetes platform's own factor: the QoS class a pod is
// given, from the cell's cpus and memory limits.
const FQoS = "qos"

// The levels of qos.
const (
	// QoSLimits: the cell's limits as the container's limits, requested
	// as much: Guaranteed with cpus and memory, Burstable with one,
	// BestEffort with neither.
	QoSLimits     = "limits"
	QoSGuaranteed = "guaranteed" // requests = limits, both cpus and memory (the cell must set both)
	QoSBurstable  = "burstable"  // the cell's limits as requests only: the pod may use more when the node has it
	QoSBestEffort = "besteffort" // no requests or limits (the cell must set none)
)

var qosFactor = platform.Factor{
	Name:    FQoS,
	Default: QoSLimits,
	Doc: "the pod's QoS class from the cell's cpus and memory: limits (as limits, requested as much: Guaranteed with both, Burstable with one, BestEffort with neither), " +
		"guaranteed (requests = limits; the cell sets cpus and memory), burstable (the cell's cpus and memory as requests only, no limits: it may use more), besteffort (no requests or limits; the cell sets neither)",
	Check: anyCase(QoSLimits, QoSGuaranteed, QoSBurstable, QoSBestEffort),
}

// anyCase is the Check of a factor whose levels are levels, in any case
// ("NFTables" is nftables).
func anyCase(levels ...string) func(string) (string, error) {
	check := platform.OneOf(levels...)
	return func(v string) (string, error) { return check(strings.ToLower(v)) }
}

// resources are a pod's requests and limits for the instance's limits
// under QoS level qos; an error when the cell's limits cannot give it.
func resources(l platform.Limits, qos string) (requests, limits map[string]string, err error) {
	asked := map[string]string{}
	if l.CPUs > 0 {
		asked["cpu"] = strconv.FormatInt(int64(l.CPUs*1000+0.5), 10) + "m"
	}
	if l.MemoryBytes > 0 {
		asked["memory"] = strconv.FormatInt(l.MemoryBytes, 10)
	}
	switch qos {
	case QoSGuaranteed:
		if len(asked) < 2 {
			return nil, nil, fmt.Errorf("qos %s needs the cell's cpus and memory both (a Guaranteed pod has a limit of each)", qos)
		}
		return maps.Clone(asked), asked, nil
	case QoSBurstable:
		if len(asked) == 0 {
			return nil, nil, fmt.Errorf("qos %s needs the cell's cpus or memory (requested, not limited)", qos)
		}
		return asked, nil, nil
	case QoSBestEffort:
		if len(asked) > 0 {
			return nil, nil, fmt.Errorf("qos %s has no requests or limits, and the cell sets cpus or memory: leave them unset", qos)
		}
		return nil, nil, nil
	}
	if len(asked) == 0 {
		return nil, nil, nil
	}
	return maps.Clone(asked), asked, nil
}
