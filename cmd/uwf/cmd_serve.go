package main

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/uncaged/uwf/serve"
	"github.com/uncaged/uwf/thread"
)

// serveCommand is "uwf serve": the HTTP API, the events stream and the
// viewer.
func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "serve the JSON API, the live events stream and the viewer over HTTP",
		Description: `Listens on --addr (default ` + serve.DefaultAddr + `) and prints the viewer's address with the
token in its fragment (http://127.0.0.1:PORT/#token=...). Reads need no token
on loopback; mutations need "Authorization: Bearer <token>". Binding beyond
loopback needs an explicit --token, and then every request needs it. Threads
started from the API run in folders under --root. Request logs go to stderr
at info. SIGINT or SIGTERM shuts down: running steps are cancelled, each
thread left as it was or moved forward. docs/HTTP.md lists the routes.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "addr", Usage: "listen on `HOST:PORT`", Value: serve.DefaultAddr},
			&cli.StringFlag{Name: "token", Usage: "the bearer `TOKEN` (default: one generated at start)", EnvVars: []string{"UWF_SERVE_TOKEN"}},
			&cli.StringFlag{Name: "root", Usage: "threads started from the API run under `DIR`", DefaultText: "the current directory"},
			&cli.StringFlag{Name: "agent", Usage: "the default agent `A` of steps the API runs (a request may name another)"},
		},
		Action: withSession(func(c *cli.Context, s *session) error {
			if err := wantArgs(c, 0, 0, ""); err != nil {
				return err
			}
			return runServe(c, s)
		}),
	}
}

func runServe(c *cli.Context, s *session) error {
	ctx := c.Context
	addr := c.String("addr")
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return usageErrorf(s.cmd, "invalid --addr %q: want HOST:PORT (%v)", addr, err)
	}
	token := c.String("token")
	if c.IsSet("token") && len(token) < 16 {
		return usageErrorf(s.cmd, "--token is too short: want at least 16 characters")
	}
	if strings.ContainsAny(token, " \t\r\n") {
		return usageErrorf(s.cmd, "--token must not hold white space")
	}
	// Request logs at info unless --log-level says otherwise.
	log := s.serviceLog(c)
	cfg, err := s.config()
	if err != nil {
		return err
	}
	home, err := s.homeDir()
	if err != nil {
		return err
	}
	repo, closeStore, err := s.open(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	srv, err := serve.New(repo, &serve.Options{
		Token: token, ExplicitToken: token != "", Root: c.String("root"),
		Run: thread.RunOptions{
			Agent: c.String("agent"), Config: cfg, Home: home, Store: s.storeURL(), Durability: s.durability,
		},
		Engine: &thread.Options{Now: s.now, NewID: s.newID, Logger: log},
		Logger: log,
		Mask:   s.mask,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		host = "127.0.0.1"
		if ip.To4() == nil {
			host = "[::1]"
		}
	} else if ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	fmt.Fprintf(c.App.Writer, "uwf serve: the viewer is at http://%s:%s/#token=%s\n", host, port, srv.Token())
	log.Info("listening", "addr", ln.Addr().String(), "store", s.printableStoreURL())
	err = srv.Serve(ctx, ln)
	if errors.Is(err, serve.ErrNeedToken) {
		return usageErrorf(s.cmd, "%v", err)
	}
	return err
}
