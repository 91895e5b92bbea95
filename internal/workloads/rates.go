package workloads

// The rates at which the dry run's estimate counts the work of a workload
// whose time no parameter gives (workload.Work): what one thread, or one
// instance's disk, did on the project's 2-core machine, rounded, and what
// the studies' own run times imply. An estimate's, never a measurement's.
const (
	// linpackRate: one thread of OpenBLAS's dgesv solved n = 4000 and 5000
	// at 39 to 44 GFLOPS, two threads n = 4000 at 79; S0's MKL did N =
	// 15000 in 121 s (S0 §IV.D), 18.6 GFLOPS.
	linpackRate = 40e9 // flops a second, a thread
	// linpackCheckRate: ctb-linpack generates the matrix, then again for
	// the residual check, at about 200 million elements a second.
	linpackCheckRate = 200e6 // matrix elements a second
	// streamRate: STREAM's kernels averaged 10 to 24 GB/s over their
	// iterations on one core; S0's 60M elements, 200 times, took 122 s
	// (S0 §IV.D), 7.9 GB/s.
	streamRate = 10e9 // bytes a second
	// diskRate, bonnieFixed: a trial of bonnie++ moves four times its file
	// (write, rewrite's read and write, read), then seeks; it took 15 to
	// 20 s with a 4 GiB file, 8.5 s with 1 GiB under a 256 MiB limit
	// (docs/workloads.md): about 1.4 GB/s and 5 s, counted at 1 GB/s and
	// 4 s. S0's 8192 MB took 108 s (S0 §IV.D).
	diskRate    = 1e9 // bytes a second
	bonnieFixed = 4   // seconds: the random seeks, the start
	// bonnieFileRate: bonnie++'s small-file test needs several thousand
	// files before its creation is slow enough to time (docs/workloads.md).
	bonnieFileRate = 5000 // files created a second
	// corpusRate, compressRate, decompressRate: cpu.compress generated 30
	// MB of its corpus in 1.1 s, and pbzip2 -9 with one thread compressed
	// it in 2.7 s and decompressed it in 1.7 s.
	corpusRate     = 25e6 // bytes generated a second
	compressRate   = 10e6 // bytes compressed a second, a thread
	decompressRate = 20e6 // bytes decompressed a second, a thread
	// sockperfAround: sockperf takes about 2 s of its own around its
	// test time (docs/workloads.md, net.sockperf).
	sockperfAround = 2 // seconds
	// transferRate: a flow of net.transfer counted at 1 Gbit/s, S4's and
	// S1's link rate (the bridge between two instances here is faster,
	// Open vSwitch's userspace datapath about that).
	transferRate = 125e6 // bytes a second
)
