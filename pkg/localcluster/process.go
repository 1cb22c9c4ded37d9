package localcluster

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// pipeDrainDelay bounds how long Wait keeps reading a child's output after it exited, in case something
// it left behind still holds the pipe open.
const pipeDrainDelay = 5 * time.Second

// Process is a child process that runs in its own process group. Its output goes, line by line and
// prefixed with its name, to the writer it was started with.
type Process struct {
	name   string
	cmd    *exec.Cmd
	out    *lineWriter
	grace  time.Duration
	done   chan struct{}
	waited error // set before done is closed

	stopping atomic.Bool
	stopOnce sync.Once
}

// command describes a child process to start.
type command struct {
	name  string
	path  string
	args  []string
	env   []string // added to the environment of this process; later entries win
	logs  io.Writer
	grace time.Duration
}

// startProcess starts c in a new process group and reaps it in the background.
func startProcess(c command) (*Process, error) {
	if _, err := os.Stat(c.path); err != nil {
		return nil, fmt.Errorf("finding %s binary, %w", c.name, err)
	}
	cmd := exec.Command(c.path, c.args...)
	cmd.Env = append(os.Environ(), c.env...)
	cmd.SysProcAttr = sysProcAttr()
	out := newLineWriter(c.name, c.logs)
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.WaitDelay = pipeDrainDelay
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s, %w", c.name, err)
	}
	p := &Process{name: c.name, cmd: cmd, out: out, grace: c.grace, done: make(chan struct{})}
	go func() {
		p.waited = cmd.Wait()
		out.Flush()
		close(p.done)
	}()
	return p, nil
}

// Name is the component name the process was started as.
func (p *Process) Name() string { return p.name }

// PID is the operating system process id, which is also its process group id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Done is closed once the process has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is nil while the process runs and after it exited because Stop was called. Once the process
// exited by itself, Err describes how, with the last lines it printed.
func (p *Process) Err() error {
	select {
	case <-p.done:
	default:
		return nil
	}
	if p.stopping.Load() {
		return nil
	}
	return p.exitError()
}

func (p *Process) exitError() error {
	status := p.waited
	if status == nil {
		status = errors.New("exit status 0")
	}
	return fmt.Errorf("%s exited unexpectedly, %w; last output:\n%s", p.name, status, p.out.Tail())
}

// Stop sends SIGTERM to the process group, then SIGKILL if the process has not exited within its grace
// period, and returns once the process has been reaped. It is safe to call more than once.
func (p *Process) Stop() error {
	var err error
	p.stopOnce.Do(func() { err = p.stop() })
	return err
}

func (p *Process) stop() error {
	p.stopping.Store(true)
	pgid := p.cmd.Process.Pid
	select {
	case <-p.done:
		_ = killGroup(pgid, syscall.SIGKILL) // anything the process left behind in its group
		return nil
	default:
	}
	if err := killGroup(pgid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("sending SIGTERM to %s, %w", p.name, err)
	}
	timer := time.NewTimer(p.grace)
	defer timer.Stop()
	select {
	case <-p.done:
	case <-timer.C:
		p.out.Note("did not exit within the grace period after SIGTERM, sending SIGKILL")
		if err := killGroup(pgid, syscall.SIGKILL); err != nil {
			return fmt.Errorf("sending SIGKILL to %s, %w", p.name, err)
		}
		<-p.done
	}
	_ = killGroup(pgid, syscall.SIGKILL) // anything the process left behind in its group
	return nil
}

// killGroup signals every process in the group; a group that is already gone is not an error.
func killGroup(pgid int, sig syscall.Signal) error {
	if err := syscall.Kill(-pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}
