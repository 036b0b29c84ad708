package agent_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// update rewrites the golden files under testdata/golden.
var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// helperEnv marks the test binary, re-executed by a Command under test, as
// the helper program: it runs helperMain instead of the tests.
const helperEnv = "UWF_AGENT_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(helperMain(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// helperReport is what the "echo" helper prints.
type helperReport struct {
	Stdin string            `json:"stdin"`
	Args  []string          `json:"args"`
	Cwd   string            `json:"cwd"`
	Env   map[string]string `json:"env"`
}

// helperMain is the helper program. Its first argument picks what it does:
//
//	echo ARGS...         print stdin, args, cwd and environment as JSON
//	exit N               print to stdout and stderr, exit N
//	sleep D              sleep for D
//	ignore-term D        ignore SIGTERM, sleep for D
//	kill-self N          kill itself with signal N
//	huge N               print N bytes
//	stderr-huge N        print N bytes to stderr, then "END"
//	print OUT ERR N      print file OUT to stdout, file ERR (if not "-")
//	                     to stderr, exit N (a tool's recorded output)
//	catlast ARGS...      print the content and mode of the file its last
//	                     argument names, and the arguments before it
//	grandchild FILE MODE start a grandchild that sleeps 60 s, write its pid
//	                     to FILE, then: "sleep" (60 s) or "exit" (exit 0 at
//	                     once, the grandchild's output detached)
func helperMain(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "helper: no mode")
		return 2
	}
	switch mode, rest := args[0], args[1:]; mode {
	case "echo":
		in, _ := io.ReadAll(os.Stdin)
		cwd, _ := os.Getwd()
		env := map[string]string{}
		for _, kv := range os.Environ() {
			k, v, _ := strings.Cut(kv, "=")
			if strings.HasPrefix(k, "UWF_") || strings.HasPrefix(k, "SPEC_") || strings.HasPrefix(k, "PARENT_") {
				env[k] = v
			}
		}
		_ = json.NewEncoder(os.Stdout).Encode(helperReport{Stdin: string(in), Args: rest, Cwd: cwd, Env: env})
	case "exit":
		n, _ := strconv.Atoi(rest[0])
		fmt.Println("partial output")
		fmt.Fprintf(os.Stderr, "some noise\nboom %d\n", n)
		return n
	case "sleep":
		d, _ := time.ParseDuration(rest[0])
		time.Sleep(d)
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
		d, _ := time.ParseDuration(rest[0])
		time.Sleep(d)
	case "kill-self":
		n, _ := strconv.Atoi(rest[0])
		if self, err := os.FindProcess(os.Getpid()); err == nil {
			_ = self.Signal(syscall.Signal(n)) // not syscall.Kill: this file builds on Windows too
		}
		time.Sleep(10 * time.Second)
	case "huge":
		n, _ := strconv.Atoi(rest[0])
		_, _ = os.Stdout.Write([]byte(strings.Repeat("x", n)))
	case "stderr-huge":
		n, _ := strconv.Atoi(rest[0])
		_, _ = os.Stderr.Write([]byte(strings.Repeat("e", n)))
		fmt.Fprintln(os.Stderr, "END")
	case "print":
		out, _ := os.ReadFile(rest[0])
		_, _ = os.Stdout.Write(out)
		if rest[1] != "-" {
			errText, _ := os.ReadFile(rest[1])
			_, _ = os.Stderr.Write(errText)
		}
		n, _ := strconv.Atoi(rest[2])
		return n
	case "catlast":
		last := rest[len(rest)-1]
		data, err := os.ReadFile(last)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fi, _ := os.Stat(last)
		fmt.Printf("%v %s\n%s", fi.Mode().Perm(), strings.Join(rest[:len(rest)-1], " "), data)
	case "grandchild":
		self, _ := os.Executable()
		child := exec.Command(self, "ignore-term", "60s")
		child.Env = os.Environ()
		if rest[1] == "sleep" {
			child.Stdout = os.Stdout // holds the run's stdout pipe open
		}
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		// Write, then rename: the test polls for the file.
		if err := os.WriteFile(rest[0]+".tmp", []byte(strconv.Itoa(child.Process.Pid)), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if err := os.Rename(rest[0]+".tmp", rest[0]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if rest[1] == "sleep" {
			time.Sleep(60 * time.Second)
		}
	default:
		fmt.Fprintln(os.Stderr, "helper: unknown mode", mode)
		return 2
	}
	return 0
}
