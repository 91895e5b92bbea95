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

// EngineKeys are the fingerprint keys that describe the container engine,
// the likeliest cause of a change between two campaigns on one machine, in
// that order: a new engine version (its containerd and runc with it)
// changes how every container is made, networked and stored.
var EngineKeys = []string{EnvDocker, EnvContainerd, EnvRunc, EnvStorageDriver, EnvCgroupDriver, EnvCgroupVersion, EnvDefaultRuntime}

// EnvSubnetPool is the campaign's subnet pool, every address it
// configured came from (a setting of the campaign, not of the machine).
const EnvSubnetPool = "subnet_pool"

// Keys of the machine's tuning, what moves benchmark numbers besides the
// hardware (docs/machine-hygiene.md): recorded by sysinfo.Fingerprint,
// judged by sysinfo.Hygiene.
const (
	// EnvFreqDriver is the cpufreq driver (intel_pstate, acpi-cpufreq,
	// amd-pstate…), which says what the governor's name means.
	EnvFreqDriver = "cpu.freq_driver"
	// EnvBoost is turbo/boost: "on" or "off".
	EnvBoost = "cpu.boost"
	// EnvSMT is simultaneous multithreading: "on", "off" or "notsupported".
	EnvSMT = "cpu.smt"
	// EnvMitigations counts the CPU-vulnerability mitigations: "N
	// mitigated, M vulnerable, K not affected".
	EnvMitigations = "cpu.mitigations"
	// EnvVulnerabilities lists the vulnerabilities the CPU is not immune
	// to, "name: kernel's text | …" (the detail of EnvMitigations).
	EnvVulnerabilities = "cpu.vulnerabilities"
	// EnvCmdline is the kernel's command line (without init's arguments).
	EnvCmdline = "kernel.cmdline"
	// EnvTHP is the transparent huge pages mode: always, madvise or never.
	EnvTHP = "mm.thp"
	// EnvSwap is the swap space's size in bytes.
	EnvSwap = "swap.bytes"
	// EnvHostCgroupVersion is the host's cgroup hierarchy: "2" (unified)
	// or "1" (v1 or hybrid).
	EnvHostCgroupVersion = "cgroup.version"
	// EnvVirt is the hypervisor ctrbench runs under (kvm, qemu, xen,
	// vmware, microsoft, gvisor, wsl…): "none" on bare metal.
	EnvVirt = "virt"
	// EnvContainer is the container ctrbench runs in (docker, podman,
	// lxc…): "none" when it runs on the host.
	EnvContainer = "virt.container"
	// EnvPower is "ac" or "battery" on a machine with a battery; absent
	// elsewhere.
	EnvPower = "power.supply"
)

// Keys of the conditions at a campaign's start: other load, swap in use.
// They differ from one run to the next, so compare never checks them
// (they are in Noise, not in Fingerprint).
const (
	// EnvSwapUsed is the swap in use, in bytes.
	EnvSwapUsed = "swap.used_bytes"
	// EnvLoadAvg1 is the 1-minute load average.
	EnvLoadAvg1 = "load.avg1"
	// EnvLoadBusiest lists the 3 processes that used the most CPU in
	// ~200 ms, ctrbench aside: "name pid cpu%, …" (% of one CPU), or
	// "none".
	EnvLoadBusiest = "load.busiest"
)

// FingerprintKey is one key of the fingerprint two campaigns are compared
// by. Strict keys describe the machine and its engine: a difference there
// can change every number, and `compare --strict-env` refuses it. The
// others (the host's name, ctrbench's version) are shown, never refused.
type FingerprintKey struct {
	Key    string
	Strict bool
	// Sparse keys are not in every campaign: those of an older ctrbench
	// lack them, and so does a machine without the file they come from.
	// One that only one of two campaigns has is no difference.
	Sparse bool
}

// Fingerprint is what `compare` checks, in the order it shows differences.
//
// Of the machine's tuning, strict: the governor, boost and SMT set the
// clock and what shares a core; mitigations put a cost on every system
// call and context switch; THP changes page faults; a hypervisor or a
// container around ctrbench, and the host's cgroup version, change what
// limits and accounts every container. Shown only: the kernel's command
// line (its effects are in the other keys), the swap's size, the power
// supply (it acts through the governor and boost).
var Fingerprint = []FingerprintKey{
	{Key: EnvKernel, Strict: true}, {Key: EnvCPUModel, Strict: true}, {Key: EnvCPUCores, Strict: true},
	{Key: EnvMemory, Strict: true}, {Key: EnvGovernor, Strict: true},
	{Key: EnvBoost, Strict: true, Sparse: true}, {Key: EnvSMT, Strict: true, Sparse: true},
	{Key: EnvMitigations, Strict: true, Sparse: true}, {Key: EnvTHP, Strict: true, Sparse: true},
	{Key: EnvVirt, Strict: true, Sparse: true}, {Key: EnvContainer, Strict: true, Sparse: true},
	{Key: EnvHostCgroupVersion, Strict: true, Sparse: true},
	{Key: EnvOS, Strict: true},
	{Key: EnvDocker, Strict: true}, {Key: EnvContainerd, Strict: true}, {Key: EnvRunc, Strict: true},
	{Key: EnvDefaultRuntime, Strict: true}, {Key: EnvCgroupDriver, Strict: true}, {Key: EnvCgroupVersion, Strict: true},
	{Key: EnvStorageDriver, Strict: true},
	{Key: EnvCmdline, Sparse: true}, {Key: EnvSwap, Sparse: true}, {Key: EnvPower, Sparse: true},
	{Key: EnvHostname}, {Key: EnvCtrbench},
}

// Noise are the keys of the conditions at a campaign's start (other load,
// swap in use): compare shows them beside each other, never as a
// difference, since they differ every run.
var Noise = []string{EnvLoadAvg1, EnvLoadBusiest, EnvSwapUsed}
