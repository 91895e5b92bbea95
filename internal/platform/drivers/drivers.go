// Package drivers imports every platform driver, so that each registers
// itself. Commands import it for its side effect; a new platform adds its
// package here.
package drivers

import (
	_ "github.com/ctrbench/ctrbench/internal/platform/docker"     // Docker Engine containers
	_ "github.com/ctrbench/ctrbench/internal/platform/kubernetes" // Kubernetes pods (your cluster, or the test cluster)
	_ "github.com/ctrbench/ctrbench/internal/platform/lxc"        // LXC system containers (S3)
	_ "github.com/ctrbench/ctrbench/internal/platform/native"     // host processes
	_ "github.com/ctrbench/ctrbench/internal/platform/nested"     // nested containers (S1)
	_ "github.com/ctrbench/ctrbench/internal/platform/podman"     // podman containers
	_ "github.com/ctrbench/ctrbench/internal/platform/swarm"      // Docker Swarm services (emulated cluster, or yours)
	_ "github.com/ctrbench/ctrbench/internal/platform/vm"         // QEMU virtual machines (S1)
)
