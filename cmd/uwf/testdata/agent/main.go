// Command agent is a uwf agent for the tests of cmd/uwf: it plays every
// role of the review-loop workflow. It reads its prompt on stdin and keeps
// it, with the UWF_ variables and its working folder, in the folder
// $AGENT_LOG as <n>-<role>-<attempt>.txt and .env; then it prints a
// frontmatter answer. The reviewer rejects the first change it sees and
// approves the next.
//
// With AGENT_OPEN=1 it opens the store it is handed in UWF_STORE with
// store.Open, as any Go agent would, and logs the head of its thread
// there as head=<hash> in its .env file.
//
// With AGENT_LEAK=1 it leaks everything it knows, as a careless agent
// would: its first run prints its environment and $UWF_HOME/.env to stderr
// and fails with the value of $LEAK_FATAL as its last stderr line; later
// runs print both to stderr and after their answer on stdout.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/uncaged/uwf/store"
)

func main() {
	prompt, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail(err)
	}
	dir := os.Getenv("AGENT_LOG")
	leak := os.Getenv("AGENT_LEAK") == "1"
	if leak {
		dumpEnv(os.Stderr)
		marker := filepath.Join(dir, "leak-failed")
		if _, err := os.Stat(marker); err != nil {
			if err := os.WriteFile(marker, nil, 0o644); err != nil {
				fail(err)
			}
			fmt.Fprintln(os.Stderr, "fatal: cannot go on with", os.Getenv("LEAK_FATAL"))
			os.Exit(3)
		}
		defer dumpEnv(os.Stdout)
	}
	role, attempt := os.Getenv("UWF_ROLE"), os.Getenv("UWF_ATTEMPT")
	runs, _ := filepath.Glob(filepath.Join(dir, "*.txt"))
	reviews, _ := filepath.Glob(filepath.Join(dir, "*-reviewer-*.txt"))
	name := filepath.Join(dir, fmt.Sprintf("%02d-%s-%s", len(runs)+1, role, attempt))
	if err := os.WriteFile(name+".txt", prompt, 0o644); err != nil {
		fail(err)
	}
	cwd, _ := os.Getwd()
	var env strings.Builder
	for _, k := range []string{"UWF_THREAD", "UWF_ROLE", "UWF_WORKFLOW", "UWF_ATTEMPT", "UWF_HOME", "UWF_STORE", "UWF_DURABILITY"} {
		fmt.Fprintf(&env, "%s=%s\n", k, os.Getenv(k))
	}
	fmt.Fprintf(&env, "cwd=%s\n", cwd)
	if os.Getenv("AGENT_OPEN") == "1" {
		ctx := context.Background()
		repo, release, err := store.Open(ctx, os.Getenv("UWF_STORE"), &store.Options{Durability: os.Getenv("UWF_DURABILITY")})
		if err != nil {
			fail(err)
		}
		head, err := repo.Refs().Get(ctx, "threads/"+os.Getenv("UWF_THREAD"))
		release()
		if err != nil {
			fail(err)
		}
		fmt.Fprintf(&env, "head=%s\n", head)
	}
	if err := os.WriteFile(name+".env", []byte(env.String()), 0o644); err != nil {
		fail(err)
	}
	fmt.Fprintf(os.Stderr, "agent: %s, attempt %s\n", role, attempt)
	switch role {
	case "planner":
		fmt.Print("---\nstatus: done\nsteps:\n  - add the flag\n  - document it\n---\n# Plan\n\nTwo steps.\n")
	case "developer":
		fmt.Printf("---\nstatus: done\nsummary: added the flag (change %d)\n---\nDone.\n", len(runs)+1)
	case "reviewer":
		if len(reviews) == 0 {
			fmt.Print("---\nstatus: rejected\ncomments: the flag has no test\n---\nPlease add a test.\n")
		} else {
			fmt.Print("---\nstatus: approved\ncomments: good\n---\nLGTM.\n")
		}
	default:
		fail(fmt.Errorf("unknown role %q", role))
	}
}

// dumpEnv prints the environment, one variable a line, and uwf's .env.
func dumpEnv(w io.Writer) {
	fmt.Fprintln(w, "\nmy environment:")
	for _, kv := range os.Environ() {
		fmt.Fprintln(w, kv)
	}
	if b, err := os.ReadFile(filepath.Join(os.Getenv("UWF_HOME"), ".env")); err == nil {
		fmt.Fprintf(w, "\nuwf's .env:\n%s", b)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "agent:", err)
	os.Exit(1)
}
