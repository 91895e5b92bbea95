package spec

import (
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/ctrbench/ctrbench/internal/vocab"
)

// envelopeExamples are limits of the emulated machine any machine gives.
var envelopeExamples = map[string]string{vocab.FCPUs: "1", vocab.FCpuset: "0", vocab.FMemory: "1GiB"}

// envelope reads "machine: {cpus, cpuset, memory}", the emulated machine.
func (p *parser) envelope(n *yaml.Node, m Machine) Envelope {
	var v Envelope
	for key, vn := range p.fields(n, "machine", []string{vocab.FCPUs, vocab.FCpuset, vocab.FMemory}) {
		s, ok := p.scalar(vn, "machine."+key)
		if !ok {
			continue
		}
		level, err := checkLevel(key, s, p.wls, m)
		if err != nil {
			p.addf(vn, "machine: %v", err)
			continue
		}
		switch key {
		case vocab.FCPUs:
			v.CPUs, _ = strconv.ParseFloat(level, 64)
		case vocab.FCpuset:
			v.Cpuset = level
		case vocab.FMemory:
			n, _ := vocab.ParseSize(level)
			v.MemoryBytes = int64(n)
		}
		if level == vocab.NoLimit {
			p.addf(vn, "machine.%s: give a limit, such as %s (leave the key out for no limit)", key, envelopeExamples[key])
		}
	}
	return v
}
