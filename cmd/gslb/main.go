// Command gslb explains, replays and checks the gslb plugin's decisions
// with the plugin's own code, from a Corefile's gslb block, and audits the
// block's location sources against each other.
//
//	gslb explain [flags] ADDRESS[/PREFIX] [NAME] [TYPE]
//	gslb replay  [flags] INPUT...
//	gslb check   [flags]
//	gslb audit   [flags] [INPUT...]
//	gslb version
//	gslb feed    [flags]           (the edge agent)
//
// Exit status: 0 ok, 1 an error (a bad Corefile, node table, database or
// input), 2 bad usage, 3 replay's cross-province ratio above -max-cross.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	clog "github.com/coredns/coredns/plugin/pkg/log"

	_ "github.com/gslbdns/gslb/cmd/coredns/stock" // the stock plugins, in the server's order
	"github.com/gslbdns/gslb/config"
	"github.com/gslbdns/gslb/engine"
	"github.com/gslbdns/gslb/internal/buildinfo"
)

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
	exitCross = 3
)

const usage = `usage:
  gslb explain [flags] ADDRESS[/PREFIX] [NAME] [TYPE]
  gslb replay  [flags] [-baseline-nodes FILE] [-feed SNAPSHOT] [-max-cross FRACTION] [-name NAME] [-strict] INPUT...
  gslb check   [flags]
  gslb audit   [flags] [-json] [-sample N] [-quality FILE] [-overrides OUT] [INPUT...]
  gslb version
  gslb feed    -log FILE -url URL -token-file FILE -node ID [flags]
  gslb resolvers [-json] [-ttl SECONDS] [-conf FILE] [-top N] INPUT...

ADDRESS/PREFIX is sent as an ECS option; a bare ADDRESS is the resolver's own.
Run 'gslb COMMAND -h' for the flags.
`

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	clog.Discard() // the plugin's own log lines are for the server
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	cmds := map[string]func(context.Context, []string, io.Writer, io.Writer) int{
		"explain":   explain,
		"replay":    replay,
		"check":     check,
		"audit":     audit,
		"version":   version,
		"feed":      feedAgent,
		"resolvers": resolversCmd,
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		if args[0] == "-h" || args[0] == "-help" || args[0] == "help" {
			fmt.Fprint(stdout, usage)
			return exitOK
		}
		fmt.Fprintf(stderr, "gslb: unknown command %q\n%s", args[0], usage)
		return exitUsage
	}
	return cmd(ctx, args[1:], stdout, stderr)
}

// common are the flags every command takes.
type common struct {
	cfg engine.Config
}

func (c *common) register(fs *flag.FlagSet, engine bool) {
	fs.StringVar(&c.cfg.Corefile, "conf", "Corefile", "the Corefile whose gslb block to use")
	fs.StringVar(&c.cfg.Zone, "zone", "", "the gslb block's zone, when several server blocks have one")
	fs.StringVar(&c.cfg.Nodes, "nodes", "", "a node table to use instead of the block's")
	fs.StringVar(&c.cfg.IPDB, "ipdb", "", "an IPIP.net database to use instead of the block's")
	fs.StringVar(&c.cfg.Overrides, "overrides", "", "an overrides file to use instead of the block's")
	if engine {
		fs.BoolVar(&c.cfg.Live, "live", false, "also ask the block's Redis and online API")
		fs.BoolVar(&c.cfg.Probe, "probe", false, "probe every node once first; else each is up with its table load")
	}
}

// parse parses args, flags before or after the arguments, printing the
// error and the usage on a bad one; "--" ends the flags.
func parse(fs *flag.FlagSet, args []string, stderr io.Writer) (ok bool, status int) {
	fs.SetOutput(stderr)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return false, exitOK
			}
			return false, exitUsage
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			pos = append(pos, rest...) // after "--": all arguments
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	fs.Parse(append([]string{"--"}, pos...)) // leaves the arguments in fs.Args()
	return true, exitOK
}

// version prints the plugin's version and the commit the tool was built from.
func version(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: gslb version\n\nPrints the plugin's version and the commit this tool was built from,\nas coredns -version does: gslb VERSION, commit COMMIT.\n\nExit status: 0, or 2 on bad usage.")
	}
	if ok, st := parse(fs, args, stderr); !ok {
		return st
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "gslb version: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	fmt.Fprintln(stdout, buildinfo.Read())
	return exitOK
}

// help ends a command's usage, before its flags: its exit statuses and
// an example.
func help(w io.Writer, exits, example string) {
	fmt.Fprintf(w, "\nExit status: %s.\n\nExample:\n  %s\n\nFlags:\n", exits, example)
}

func fail(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "gslb: %v\n", err)
	return exitError
}

func check(_ context.Context, args []string, stdout, stderr io.Writer) int {
	var c common
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	c.register(fs, false)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: gslb check [flags]\n\nLoads the gslb block, its node table and its databases as a reload would.")
		help(stderr, "0 the server would start (warnings on stderr); 1 it would not, with its error; 2 bad usage",
			"gslb check -conf Corefile")
		fs.PrintDefaults()
	}
	if ok, st := parse(fs, args, stderr); !ok {
		return st
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "gslb check: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	// The plugins' setup warnings from validate; gslb's own from the
	// engine, which loads the block as -nodes and the like say.
	var ws warnings
	done := ws.capture()
	err := validate(c.cfg.Corefile)
	done(false)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitError
	}
	done = ws.capture()
	startupWarnings()
	errs, err := engine.Check(c.cfg)
	done(true)
	if err != nil {
		// The server's own message, as it would log it.
		fmt.Fprintln(stderr, err)
		return exitError
	}
	// The server starts and logs these: Warnings, then errors it survives.
	for _, w := range append(ws.list, errs...) {
		fmt.Fprintln(stderr, "WARNING:", w)
	}
	fmt.Fprintln(stdout, "ok")
	return exitOK
}

// corefileInput is a Corefile read from a file, so that errors name it.
type corefileInput struct {
	body []byte
	path string
}

func (i corefileInput) Body() []byte       { return i.body }
func (i corefileInput) Path() string       { return i.path }
func (i corefileInput) ServerType() string { return "dns" }

// validate runs every directive's setup of the Corefile at path, with the
// plugins the server is built with, then builds its servers, as a start
// does before it listens: an unknown directive, a plugin the build lacks,
// any plugin's bad arguments and two blocks serving one zone on one port
// fail here with the server's words.
func validate(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	validated, blocks = nil, nil
	if err := caddy.ValidateAndExecuteDirectives(corefileInput{data, path}, nil, true); err != nil {
		return err
	}
	if validated == nil {
		return nil // no gslb block: the engine says so
	}
	// Servers are built, not started: nothing listens.
	_, err = validated.MakeServers()
	return err
}

// validated is the server type's context of the Corefile validate
// checks, as the gslb directive's setup saw it.
var validated caddy.Context

// The tool links the stock plugins, not gslb's handler: its directive is
// validated by the engine, which loads the block as the server's setup
// does.
func init() {
	plugin.Register(config.Name, func(c *caddy.Controller) error {
		validated = c.Context()
		blocks = append(blocks, dnsserver.GetConfig(c))
		return engine.Validate(c)
	})
}
