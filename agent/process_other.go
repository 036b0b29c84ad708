//go:build !unix

package agent

import (
	"errors"
	"os"
	"os/exec"
)

// Outside Unix (Windows) there are no process groups to signal and no
// SIGTERM: a stopped run's command is terminated at once, without the
// grace period, and processes it started itself may outlive it.

// ownGroup does nothing outside Unix.
func ownGroup(cmd *exec.Cmd) {}

// stopGroup terminates the command.
func stopGroup(p *os.Process) error {
	if err := p.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

// killGroup terminates the command if it still runs.
func killGroup(p *os.Process) { _ = stopGroup(p) }
