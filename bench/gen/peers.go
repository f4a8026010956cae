package main

import (
	"bufio"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/template"
)

// peerSite is a site with its nodes' IPv4 answers, for the templates.
type peerSite struct {
	site
	Lower                   string // lower-case code, e.g. "bj"
	Telecom, Unicom, Mobile string // IPv4 answers
}

// peerData is what the peer templates (bench/peers/*.tmpl) see.
type peerData struct {
	Sites []peerSite
	ASNs  map[string][]uint32 // carrier -> ASNs
	Var   map[string]string   // from -set KEY=VALUE
}

type setFlag map[string]string

func (s setFlag) String() string { return fmt.Sprint(map[string]string(s)) }
func (s setFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok {
		return fmt.Errorf("want KEY=VALUE, got %q", v)
	}
	s[k] = val
	return nil
}

func cmdPeers(args []string) error {
	fl := flag.NewFlagSet("peers", flag.ExitOnError)
	tdir := fl.String("templates", "bench/peers", "directory of *.tmpl files (text/template)")
	out := fl.String("out", "", "output directory: each FILE.tmpl becomes FILE, same relative path")
	vars := setFlag{}
	fl.Var(vars, "set", "KEY=VALUE for {{.Var.KEY}} (repeatable)")
	fl.Parse(args)
	if *out == "" {
		return fmt.Errorf("need -out")
	}
	d := peerData{ASNs: carrierASNs, Var: vars}
	for i, s := range sites {
		ps := peerSite{site: s, Lower: lower(s.Code)}
		ps.Telecom = fmt.Sprintf("%s%d", carriers[0].V4, i+1)
		ps.Unicom = fmt.Sprintf("%s%d", carriers[1].V4, i+1)
		ps.Mobile = fmt.Sprintf("%s%d", carriers[2].V4, i+1)
		d.Sites = append(d.Sites, ps)
	}
	funcs := template.FuncMap{
		"asnlist": func(a []uint32) string {
			s := make([]string, len(a))
			for i, n := range a {
				s[i] = fmt.Sprint(n)
			}
			return strings.Join(s, ",")
		},
	}
	n := 0
	err := filepath.WalkDir(*tdir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(path, ".tmpl") {
			return err
		}
		rel, _ := filepath.Rel(*tdir, path)
		dst := filepath.Join(*out, strings.TrimSuffix(rel, ".tmpl"))
		t, err := template.New(filepath.Base(path)).Funcs(funcs).Option("missingkey=error").ParseFiles(path)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		n++
		return writeFile(dst, func(w *bufio.Writer) error { return t.Execute(w, d) })
	})
	if err == nil {
		fmt.Fprintf(os.Stderr, "peers: rendered %d templates from %s into %s\n", n, *tdir, *out)
	}
	return err
}
