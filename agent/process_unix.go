//go:build unix

package agent

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// ownGroup makes cmd start in a process group of its own, whose id is the
// leader's pid (Setpgid with Pgid 0).
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// stopGroup asks the run's process group to stop: SIGTERM to every process
// in it.
func stopGroup(p *os.Process) error { return signalGroup(p.Pid, syscall.SIGTERM) }

// killGroup kills (SIGKILL) whatever is left of the run's process group.
func killGroup(p *os.Process) { _ = signalGroup(p.Pid, syscall.SIGKILL) }

// signalGroup sends sig to the process group pgid; a group already gone is
// not an error.
func signalGroup(pgid int, sig syscall.Signal) error {
	if pgid <= 0 {
		return nil
	}
	if err := syscall.Kill(-pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}
