package vm

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/ctrbench/ctrbench/internal/vocab"
)

// SeenRestarts is the trial's record of a machine booted again because
// its kernel locked up before its agent's output began.
const SeenRestarts = "vm.restarts"

// lockupMark is what the kernel's watchdog prints when a CPU has not
// scheduled for twice its threshold (20 s by default). Under TCG
// emulation, now and then both virtual CPUs of a machine with an engine
// lock up as runc starts the agent's container (2 in about 40 boots here;
// never seen with KVM or without an engine): the machine would never
// answer.
var lockupMark = []byte("soft lockup")

// boot is one QEMU process of a machine.
type boot struct {
	cmd *exec.Cmd
	out *os.File       // its standard output: the agent's port
	ctl io.WriteCloser // its standard input: control lines to the port
}

// kill kills the QEMU process group.
func (b boot) kill() { _ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL) }

// boot starts QEMU with the machine's arguments in its cgroup.
func (in *instance) boot() (boot, error) {
	cmd := exec.Command(qemuBinary, in.args...)
	// Dies with ctrbench; its own process group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	out, w, err := os.Pipe()
	if err != nil {
		return boot{}, err
	}
	ctl, err := cmd.StdinPipe()
	if err != nil {
		out.Close()
		w.Close()
		return boot{}, err
	}
	cmd.Stdout = w
	cmd.Stderr = &in.qemuErr
	if in.tapFile != nil {
		cmd.ExtraFiles = []*os.File{in.tapFile} // its fd 3 (machine.TapFD)
	}
	err = cmd.Start()
	w.Close()
	if err != nil {
		out.Close()
		return boot{}, err
	}
	b := boot{cmd: cmd, out: out, ctl: ctl}
	if err := in.group.Add(cmd.Process.Pid); err != nil {
		b.kill()
		_ = cmd.Wait()
		out.Close()
		return boot{}, err
	}
	return b, nil
}

// supervise copies the machine's output to the agent's stream until QEMU
// ends, watching the console for a kernel lockup. A machine that locks up
// before its agent's output begins — nothing of the trial has run — is
// booted once more (recorded, SeenRestarts); a lockup after that ends it,
// and Wait says so as the platform's failure, so the trial is tried again.
func (in *instance) supervise(b boot) {
	for {
		copied := make(chan struct{})
		go func() {
			in.copyOut(b.out)
			close(copied)
		}()
		stop := make(chan struct{})
		locked := make(chan string, 1)
		go in.watchConsole(b, stop, locked)
		err := b.cmd.Wait()
		close(stop)
		<-copied
		b.out.Close()
		var line string
		select {
		case line = <-locked:
		default:
		}
		if line != "" && !in.output.Load() && in.restarts == 0 {
			if nb, ok := in.reboot(); ok {
				b = nb
				continue
			}
		}
		in.lockup, in.err = line, err
		in.Mark(vocab.Exit)
		in.pw.Close()
		close(in.done)
		return
	}
}

// reboot starts the machine again after a lockup, unless it is being
// removed, on a data disk made anew (the first boot may have written to it:
// an engine's store populated, a journal left open); the locked-up console
// is kept beside the new one.
func (in *instance) reboot() (boot, bool) {
	_ = os.Rename(in.console, in.console+".lockup")
	if in.disk != "" {
		if err := makeDisk(in.disk); err != nil {
			return boot{}, false
		}
	}
	in.qemuErr.Reset()
	nb, err := in.boot()
	if err != nil {
		return boot{}, false
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.removing {
		nb.kill()
		_ = nb.cmd.Wait()
		nb.out.Close()
		return boot{}, false
	}
	in.cur = nb
	in.restarts++
	return nb, true
}

// copyOut copies a boot's output to the agent's stream.
func (in *instance) copyOut(r io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			in.output.Store(true)
			if _, werr := in.pw.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// watchConsole kills the boot when its console shows a kernel lockup,
// sending the kernel's line.
func (in *instance) watchConsole(b boot, stop <-chan struct{}, locked chan<- string) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		tail := []byte(in.consoleTail())
		i := bytes.Index(tail, lockupMark)
		if i < 0 {
			continue
		}
		start := bytes.LastIndexByte(tail[:i], '\n') + 1
		end := bytes.IndexByte(tail[i:], '\n')
		if end < 0 {
			end = len(tail) - i
		}
		locked <- string(bytes.TrimSpace(tail[start : i+end]))
		b.kill()
		return
	}
}
