package result

// Keys of a campaign's environment fingerprint (Campaign.Env) that say
// whether two campaigns ran on the same machine, engine and tool: written
// here once, by sysinfo and the Docker driver, read by compare.
const (
	EnvKernel         = "kernel"
	EnvCPUModel       = "cpu.model"
	EnvCPUCores       = "cpu.cores"
	EnvMemory         = "memory.bytes"
	EnvGovernor       = "cpu.governor"
	EnvOS             = "os"
	EnvHostname       = "hostname"
	EnvCtrbench       = "ctrbench.version"
	EnvDocker         = "docker.version"
	EnvContainerd     = "containerd.version"
	EnvRunc           = "runc.version"
	EnvDefaultRuntime = "docker.default_runtime"
	EnvCgroupDriver   = "docker.cgroup_driver"
	EnvCgroupVersion  = "docker.cgroup_version"
	EnvStorageDriver  = "docker.storage_driver"
)

// FingerprintKey is one key of the fingerprint two campaigns are compared
// by. Strict keys describe the machine and its engine: a difference there
// can change every number, and `compare --strict-env` refuses it. The
// others (the host's name, ctrbench's version) are shown, never refused.
type FingerprintKey struct {
	Key    string
	Strict bool
}

// Fingerprint is what `compare` checks, in the order it shows differences.
var Fingerprint = []FingerprintKey{
	{EnvKernel, true}, {EnvCPUModel, true}, {EnvCPUCores, true}, {EnvMemory, true}, {EnvGovernor, true}, {EnvOS, true},
	{EnvDocker, true}, {EnvContainerd, true}, {EnvRunc, true}, {EnvDefaultRuntime, true},
	{EnvCgroupDriver, true}, {EnvCgroupVersion, true}, {EnvStorageDriver, true},
	{EnvHostname, false}, {EnvCtrbench, false},
}
