package workloads

// ParseSysbenchCPU is parseSysbenchCPU, for the external test of exec
// reading sysbench.
var ParseSysbenchCPU = parseSysbenchCPU
