package agent

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/ctrbench/ctrbench/internal/invocation"
)

// TakeKey returns the key the platform gave this agent
// (invocation.KeyEnv) and takes it out of the environment, so no process
// the agent starts inherits it. It then closes the agent to its own
// workload, as far as the kernel lets a process do that:
//
//   - not dumpable: /proc/<agent>/environ, fd/ and mem (where the key and
//     the agent's stdout could be found) open only to a process holding
//     CAP_SYS_PTRACE, and
//   - CAP_SYS_PTRACE leaves the agent's bounding set, so nothing it runs
//     (a root workload on the host included) can hold it.
//
// Both are best effort: an agent without CAP_SETPCAP keeps its bounding
// set, and it then holds no more than its workload does. What the key
// protects is documented in docs/reliability.md.
func TakeKey() string {
	// A copy: the runtime's environment strings are the process's
	// initial environment block itself, which eraseFromEnviron rewrites.
	key := strings.Clone(os.Getenv(invocation.KeyEnv))
	os.Unsetenv(invocation.KeyEnv)
	if key == "" {
		return ""
	}
	// /proc/<agent>/environ shows the initial block, whatever Unsetenv
	// did, to any process of the agent's user (dumpable or not, on this
	// machine's 6.18 kernel): the key is overwritten there.
	_ = eraseFromEnviron(invocation.KeyEnv + "=" + key)
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	// Every thread: the bounding set is a thread's, and the next child
	// may be forked from any of them.
	if _, _, errno := syscall.AllThreadsSyscall(syscall.SYS_PRCTL, unix.PR_CAPBSET_DROP, unix.CAP_SYS_PTRACE, 0); errno == syscall.ENOTSUP {
		_ = unix.Prctl(unix.PR_CAPBSET_DROP, unix.CAP_SYS_PTRACE, 0, 0, 0)
	}
	return key
}

// eraseFromEnviron overwrites entry in the process's initial environment
// block (between /proc/self/stat's env_start and env_end, fields 50 and
// 51), which /proc/<pid>/environ reads.
func eraseFromEnviron(entry string) error {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return err
	}
	// Fields after the command's name (in parentheses, which may hold
	// spaces) start at field 3.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return errors.New("/proc/self/stat: no command name")
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 49 {
		return fmt.Errorf("/proc/self/stat has %d fields", len(f)+2)
	}
	start, err1 := strconv.ParseInt(f[47], 10, 64)
	end, err2 := strconv.ParseInt(f[48], 10, 64)
	if err1 != nil || err2 != nil || end <= start || end-start > 1<<24 {
		return fmt.Errorf("/proc/self/stat: env_start %q, env_end %q", f[47], f[48])
	}
	mem, err := os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer mem.Close()
	block := make([]byte, end-start)
	if _, err := mem.ReadAt(block, start); err != nil {
		return err
	}
	at := bytes.Index(block, []byte(entry))
	if at < 0 {
		return nil
	}
	_, err = mem.WriteAt(bytes.Repeat([]byte{'_'}, len(entry)), start+int64(at))
	return err
}
