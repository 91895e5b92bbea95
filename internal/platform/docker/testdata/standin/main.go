// Command standin plays the ctrbench binary in the docker platform's
// integration tests. Its arguments are commands separated by ";":
//
//	echo WORDS...        print the words, one per line
//	cgroup               print the cgroup limits it sees, as key=value
//	serve ADDR N         listen on ADDR, print "listening ADDR", answer N
//	                     connections with "hello from HOSTNAME", then exit
//	dial ADDR            connect (retrying for 10 s) and print the line read
//	stat PATH            print the octal mode of PATH
//	exec PROG ARGS...    run PROG, print its output, fail if it fails
//	sleep SECONDS        sleep
//	spam N               write N numbered lines to stderr
//	exit CODE MSG...     print MSG to stderr and exit with CODE
//	agent hold           wait for SIGTERM (what HoldNamespace's container runs)
package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

var nonce string // set with -ldflags -X, to give each test run its own image

func main() {
	var cmd []string
	for _, a := range append(os.Args[1:], ";") {
		if a != ";" {
			cmd = append(cmd, a)
			continue
		}
		if len(cmd) > 0 {
			run(cmd)
		}
		cmd = nil
	}
}

// run plays one command, c[0] with its arguments c[1:].
func run(c []string) {
	switch c[0] {
	case "echo":
		for _, w := range c[1:] {
			fmt.Println(w)
		}
	case "cgroup":
		printCgroup()
	case "serve":
		serve(c[1], c[2])
	case "dial":
		dial(c[1])
	case "stat":
		printMode(c[1])
	case "exec":
		out, err := exec.Command(c[1], c[2:]...).CombinedOutput()
		os.Stdout.Write(out)
		check(err)
	case "sleep":
		d, _ := strconv.ParseFloat(c[1], 64)
		time.Sleep(time.Duration(d * float64(time.Second)))
	case "spam":
		n, _ := strconv.Atoi(c[1])
		w := bufio.NewWriter(os.Stderr)
		for i := range n {
			fmt.Fprintf(w, "line %d\n", i)
		}
		w.Flush()
	case "agent":
		if len(c) < 2 || c[1] != "hold" {
			fmt.Fprintln(os.Stderr, "agent: only hold is played")
			os.Exit(64)
		}
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
		<-sig
	case "exit":
		fmt.Fprintln(os.Stderr, strings.Join(c[2:], " "))
		code, _ := strconv.Atoi(c[1])
		os.Exit(code)
	default:
		fmt.Fprintln(os.Stderr, "unknown command", c[0], nonce)
		os.Exit(64)
	}
}

// printCgroup prints the cgroup limits the stand-in sees, v1's and v2's,
// as key=value ("missing" for a file it cannot read).
func printCgroup() {
	files := map[string]string{
		"cpu.cfs_quota_us":      "/sys/fs/cgroup/cpu/cpu.cfs_quota_us",
		"cpu.cfs_period_us":     "/sys/fs/cgroup/cpu/cpu.cfs_period_us",
		"cpuset.cpus":           "/sys/fs/cgroup/cpuset/cpuset.cpus",
		"memory.limit_in_bytes": "/sys/fs/cgroup/memory/memory.limit_in_bytes",
		"v2.cpu.max":            "/sys/fs/cgroup/cpu.max",
		"v2.cpuset.cpus":        "/sys/fs/cgroup/cpuset.cpus.effective",
		"v2.memory.max":         "/sys/fs/cgroup/memory.max",
	}
	for k, p := range files {
		b, err := os.ReadFile(p)
		v := strings.TrimSpace(string(b))
		if err != nil {
			v = "missing"
		}
		fmt.Printf("%s=%s\n", k, v)
	}
}

// serve listens on addr, prints "listening ADDR", answers n connections
// with "hello from HOSTNAME", and returns; it exits with 2 after 60 s.
func serve(addr, n string) {
	ln, err := net.Listen("tcp", addr)
	check(err)
	count, _ := strconv.Atoi(n)
	fmt.Println("listening", ln.Addr())
	host, _ := os.Hostname()
	go func() { time.Sleep(60 * time.Second); fmt.Fprintln(os.Stderr, "serve: timed out"); os.Exit(2) }()
	for range count {
		conn, err := ln.Accept()
		check(err)
		fmt.Fprintf(conn, "hello from %s\n", host)
		conn.Close()
	}
}

// dial connects to addr, retrying for 10 s, and prints the line read.
func dial(addr string) {
	var conn net.Conn
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if conn, err = net.DialTimeout("tcp", addr, time.Second); err == nil {
			break
		}
	}
	check(err)
	line, err := bufio.NewReader(conn).ReadString('\n')
	check(err)
	fmt.Print(line)
}

// printMode prints the octal mode of path, its sticky bit included.
func printMode(path string) {
	st, err := os.Stat(path)
	check(err)
	mode := uint32(st.Mode().Perm())
	if st.Mode()&os.ModeSticky != 0 {
		mode |= 0o1000
	}
	fmt.Printf("%o\n", mode)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
